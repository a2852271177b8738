"""Kubernetes manifests as the scheduler reads them: shared by the loader, live, controllers and replay.

- :mod:`~volcanolib.manifests.fields`: typed access to a manifest's fields,
  each error one line naming the file, object and field (``Ref``);
- :mod:`~volcanolib.manifests.documents`: reading YAML and JSON files of
  manifests, fast;
- :mod:`~volcanolib.manifests.pods`: pods as tasks (requests, status,
  priority) and PodGroups from their manifests;
- :mod:`~volcanolib.manifests.keys`: the well-known labels and annotations.

.. versionadded:: 0.2
"""
