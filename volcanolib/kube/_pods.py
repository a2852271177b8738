"""Moved to :mod:`volcanolib.manifests.pods`; this name stays for one release, as the same module."""

import sys

from volcanolib.manifests import pods

sys.modules[__name__] = pods
