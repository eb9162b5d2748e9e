# examples/: small programs a user can copy (built, not installed).
