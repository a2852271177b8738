"""Moved to :mod:`volcanolib.manifests.fields`; this name stays for one release, as the same module."""

import sys

from volcanolib.manifests import fields

sys.modules[__name__] = fields
