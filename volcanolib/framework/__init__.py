"""The scheduling framework: sessions, statements, hooks, configuration and plugin discovery.

Module map:

- ``hookspecs``: every hook's declaration (phase, rule, switch, faster form,
  the session attribute answering it, tie-break); ``_answers`` is generated
  from it (the session's typed answers); ``combine``: the rules;
  ``dispatch``: the compiled tables; ``registry``: plugins and actions found
  and built; ``config`` and ``arguments``: the configuration and typed
  arguments; ``traits``: what a plugin declares about itself.
- ``session``: the session's state and lifecycle, with its bases
  ``compiled`` (the combined hook answers), ``settled`` (settled-job
  bookkeeping) and ``closing`` (status and queue totals at close);
  ``plugin_session``: the narrow view a plugin has of it; ``statement``:
  every change of a task's state.
- ``placement`` and ``nodeclass``: which node, and why not (fit index, node
  classes, remembered answers); ``victims``: the victim order; ``queues``.
- ``carry``: what one session hands to the next; ``sums``: sums kept part by
  part; ``verify``: verify mode; ``fastpath``: fast paths registered with
  their references; ``bounds``: the caches' bounds.
"""
