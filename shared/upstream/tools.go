//go:build tools

// Package upstream only pins the API modules in go.mod: the blank imports keep `go mod tidy`
// from dropping them. The CRD YAML files shared/upstream_crds.py reads ship inside these modules.
package upstream

import (
	_ "open-cluster-management.io/api/cluster/v1"
	_ "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
)
