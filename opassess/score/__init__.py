"""Score and estimate stages: from classified operators to sub-scores, person-days and the risk grid.

- `weights/`: the scoring model (weights.toml) as records (`__init__`), its strict loader (`load`), `decisions`;
- `signals`: the facts measured once per operator on the traced model (`measure_all`);
- `criteria`: the nine criteria and the 30/50/20 composite (`score`);
- `estimate`: person-day ranges, P50/P90, the 20/80 view, the module roll-up and risk cells (`estimate`);
- `calibrate`: category ranges fitted to a team's recorded actuals.
"""
