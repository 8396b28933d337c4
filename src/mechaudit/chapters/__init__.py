"""What each chapter of the book does, one call per step.

A chapter notebook stays thin: its parameters cell, then calls into this subpackage for its set-up,
its "paper vs this run" rows and its LLM-only steps, then tables, figures and prose. One module per
chapter (``mechaudit.chapters.perturbations`` for chapter 05, ...) and ``workflow`` for the set-up
that chapters 02, 03 and 04 share. Everything here is importable and tested like the rest of the
package, so a second notebook or a script can reuse a chapter's steps.
"""
