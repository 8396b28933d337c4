"""The book's Sphinx extensions, each named in ``_config.yml``: tables, cross-page figures,
readable API signatures and a book that needs no other host."""
