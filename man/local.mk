# man/: manual pages.
