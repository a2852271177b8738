"""Contributed volcanolib plugins, registered only through the ``volcanolib.plugins`` entry points."""
