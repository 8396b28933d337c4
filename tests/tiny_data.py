"""A tiny vocabulary and instance file in the data formats, shared by the loader and error tests."""

VOCAB = """\
types:
  kinase: protein kinase
  outcome: finding
entities:
  - {id: K1, type: kinase, name: kinase one, aliases: [K-1]}
  - {id: K2, type: kinase, name: kinase two, aliases: [K-2]}
  - {id: K3, type: kinase, name: kinase three}
  - {id: O1, type: outcome, name: outcome one}
  - {id: O2, type: outcome, name: outcome two}
"""

INSTANCES = """\
instances:
  - id: A
    title: t
    finding: f
    terminal_id: O1
    evidence: [e1]
    openings: [h1]
"""
