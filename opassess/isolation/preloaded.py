"""Imported last by a portfolio's forkserver (portfolio/workers.preload_for), and nowhere else: what the forkserver
imported before it (torch, the capture methods, the models' libraries) is moved out of the garbage collector's sight
(`gc.freeze`), so a worker forked from it does not walk torch's million objects at its first full collections (0.08 s
of a small model's capture) and shares those pages with the forkserver untouched (the gc documentation's advice
before forking)."""
import gc

gc.freeze()
