"""`python -m opassess`: the same command line as the `opassess` script."""
from .cli import run

run()
