"""The book runner: the layer above the library that executes chapters.

``params`` (the table of contents, parameter cells and parameter-set files), ``paramspec`` (every
chapter parameter's declaration), ``preflight`` (data and run-folder checks before a kernel starts),
``estimate`` (each LLM chapter's request planner and the cost estimate), ``account`` (the LLM side of
a run: estimate, money and key checks, budget per chapter, run total) and ``execute`` (papermill).
Nothing below this package imports it.
"""
