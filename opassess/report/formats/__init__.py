"""One module per report format; each registers its render function with opassess.report.registry.register."""
