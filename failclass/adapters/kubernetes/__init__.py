"""Kubernetes: a controller (``failclass hook k8s-controller``) that watches the failed
pods of Jobs through the official client, decides each once across replicas (a Lease
elects the one that acts) and changes its Job. objects.py reads the API's objects,
changes.py maps decisions to Job patches, cluster.py holds every API call, lease.py the
leader election, controller.py the loop."""
