"""`python -m opendcn` runs the command-line interface."""

from .cli import main

main()
