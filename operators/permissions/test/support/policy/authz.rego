# The sample question OPA answers from the /bundle (data.shturval): may a user, with
# their groups, do a verb on a resource of an API group in a client cluster, and
# optionally in one of its namespaces?
#
# input: {"user": "alice", "groups": ["devs"], "verb": "get", "resource": "pods",
#         "apiGroup": "", "cluster": "fleet/c1", "namespace": "team-a"}
#
# Allowed iff some binding of the user, or of one of their groups, names a Scope whose
# clusters contain the cluster (and, for a namespace-level Scope, whose namespaces
# contain the namespace), and one of the binding's Permissions has a
# granted_cluster_rules rule whose verbs, resources and apiGroups each contain the
# asked value or "*". The package is not under the bundle's root (shturval), so the
# bundle and this file never claim the same path.
package authz

default allow := false

allow if {
	some binding in bindings
	in_scope(data.shturval.scopes[binding.scope])
	some permission in binding.permissions
	some rule in data.shturval.permissions[permission].granted_cluster_rules
	grants(rule)
}

# The user's own bindings and those of each of their groups.
bindings contains binding if {
	some binding in data.shturval.users[input.user]
}

bindings contains binding if {
	some group in input.groups
	some binding in data.shturval.groups[group]
}

in_scope(scope) if {
	scope.level != "namespace"
	input.cluster in scope.clusters
}

in_scope(scope) if {
	scope.level == "namespace"
	input.cluster in scope.clusters
	input.namespace in scope.namespaces
}

grants(rule) if {
	matches(rule.verbs, input.verb)
	matches(rule.resources, input.resource)
	matches(rule.apiGroups, input.apiGroup)
}

matches(values, asked) if asked in values

matches(values, _) if "*" in values
