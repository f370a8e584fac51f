"""`python -m opassess`: the command line."""
from opassess.cli import main

main()
