"""Moved to :mod:`volcanolib.manifests.documents`; this name stays for one release, as the same module."""

import sys

from volcanolib.manifests import documents

sys.modules[__name__] = documents
