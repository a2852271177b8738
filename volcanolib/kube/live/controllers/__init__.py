"""Volcano's controllers on a live cluster (extra ``kube``): ``volcanolib controllers``.

:class:`~volcanolib.kube.live.controllers.manager.ControllerManager` runs the
job controller (:mod:`volcanolib.controllers.job`), the PodGroup controller
(:mod:`volcanolib.manifests.owners`) and the queue controller
(:mod:`volcanolib.controllers.queue`) against the API server::

    from volcanolib.kube.live import load_api
    from volcanolib.kube.live.controllers import ControllerManager

    manager = ControllerManager(load_api(), controllers=("job", "podgroup", "queue"))
    manager.run(stop)  # until the threading.Event stop is set
"""

from volcanolib.kube.live.controllers.manager import CONTROLLERS, ControllerManager

__all__ = ["CONTROLLERS", "ControllerManager"]
