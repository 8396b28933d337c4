"""How a chapter reports: its table format and reader labels, glued values, saved tables and
figures, provenance of every compared number, the "paper vs this run" table, progress lines.

Kept free of imports here, so ``mechaudit.report.terminal`` stays cheap for the LLM layer."""
