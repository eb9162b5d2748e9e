# tools/: command-line programs installed with the library.
