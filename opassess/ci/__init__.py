"""CI: read a report back (snapshot), compare it with a baseline (diff) and apply a pipeline's gates (policy)."""
