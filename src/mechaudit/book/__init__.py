"""The book runner: the layer above the library that executes chapters.

``params`` (the table of contents, parameter defaults and parameter-set files), ``settings`` (every
chapter's parameters, one pydantic model per chapter), ``preflight`` (data and run-folder checks
before a kernel starts),
``estimate`` (the cost estimate over the chapters' plans), ``account`` (the LLM side of a run:
estimate, money and key checks, budget per chapter, run total) and ``execute`` (papermill).

One module per chapter, named after its notebook: ``ch01_problem`` ... ``ch08_tau_calibration``
hold a chapter's steps and, for a chapter that sends LLM requests, its cost plan ``plan(params)``
(listed in ``estimate.PLANS``). What they share is in ``chapter``; no chapter module imports
another. Nothing below this package imports it.
"""
