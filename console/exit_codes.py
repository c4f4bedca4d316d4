"""The CLI's exit codes (a public contract): 0 done, 2 bad input, 1 internal error."""

EXIT_OK, EXIT_INTERNAL, EXIT_BAD_INPUT = 0, 1, 2
