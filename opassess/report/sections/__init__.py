"""The report's sections, one module each: its JSON part (what `report/document.py` puts under its key) and its
display part (the typed record the formats lay out). A new section is one module here, one `Display` field and its
three layouts (terminal, md.j2, html.j2)."""
