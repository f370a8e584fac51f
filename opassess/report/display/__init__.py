"""The display: the facts of one assessment formatted for people, as typed records, built once for every format.

`build` builds it (build_display), `page` is the record every format lays out (Display), `records` the rows and
cards it holds; each section's own record is in report/sections/.
"""
