"""The documentation site's generated parts (MkDocs hook and page generators)."""
