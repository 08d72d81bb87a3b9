"""The ``miaudit`` command line. Each sub-command lives in its own module of this package."""
