"""The conformance matrix beyond one run: rows run as separate jobs and merged, recorded runs
judged again by the current code (or under another reading or revision), the history of each
agent across its releases, its badge, and the issue bodies a maintainer can file.

The runs themselves are ``acp-model fuzz`` processes started by ``cli/matrix.py``; the rows and
pages are drawn by ``report/matrix*.py``. This package sits between: it reads what the runs
recorded (each row's ``report.json`` and its findings' files) and makes documents of it.
"""
