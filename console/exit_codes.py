"""The CLI's exit codes (a public contract): 0 done, 2 bad input, 1 internal error."""

from store.errors import EXIT_BAD_INPUT, EXIT_INTERNAL

EXIT_OK = 0
__all__ = ["EXIT_BAD_INPUT", "EXIT_INTERNAL", "EXIT_OK"]
