"""fleetplace: OCM cluster placement and YuniKorn queue placement on Kafka.

The one import package of the distribution. The repository keeps its layout — `shared/` (the
library: engines, API models, bus helpers) and `services/` (the workers, the auditor, the CLI) —
and this package makes them `fleetplace.shared` and `fleetplace.services` (the two entries here
are links to those folders), so an installation adds nothing but `fleetplace` to `sys.path`.
"""
