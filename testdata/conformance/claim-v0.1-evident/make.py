#!/usr/bin/env python3
"""evident's own conformance vectors (same format as shared/conformance/claim-v0.1):
the edges evident decided beyond the shared set. Run from this folder; the output is
checked in, this script records how it was made and why each vector exists."""
import json, copy

NOW = "2026-08-27T18:04:10Z"
base = {
    "spec_version": "0.1",
    "task": {"id": "deploy-4471", "description": "Update the billing address on account 4471", "requested_by": "user"},
    "claimed_outcome": "Updated the billing address on account 4471.",
    "mutations": [{"id": "m1", "kind": "state_write", "target": "accounts/4471", "at": "2026-08-27T18:04:02Z"}],
    "evidence": [{
        "check_type": "state_readback", "target": "accounts/4471",
        "expected": {"billing_zip": "94107"}, "observed_value": {"billing_zip": "94107"},
        "at": "2026-08-27T18:04:09Z", "covers": ["m1"],
        "verifier": {"id": "gitreal-gate/0.3", "kind": "independent"}}],
    "policy": {"id": "default", "requires": ["state_readback"], "max_age_s": 300},
}

def vec(name, about, edit, expect, now=NOW):
    d = copy.deepcopy(base)
    edit(d)
    out = {"name": name, "about": about, "now": now, "document": d, "expect": expect}
    with open(name + ".json", "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")

ok = {"state": "verified", "unmet": []}
refuted = {"state": "refuted", "unmet": []}
unv = {"state": "unverified", "unmet": ["state_readback", "mutation:m1"]}
ev = lambda d: d["evidence"][0]

def times(mut, evd):
    def edit(d):
        d["mutations"][0]["at"] = mut
        ev(d)["at"] = evd
    return edit

vec("time-lowercase-t-and-z", "RFC 3339 allows t and z in lower case.",
    times("2026-08-27t18:04:02z", "2026-08-27t18:04:09z"), ok)
vec("time-minus-zero-offset-is-utc", "-00:00 is UTC with an unknown local offset.",
    times("2026-08-27T18:04:02Z", "2026-08-27T18:04:09-00:00"), ok)
vec("time-one-nanosecond-after", "Nanosecond precision is honoured.",
    times("2026-08-27T18:04:02.000000001Z", "2026-08-27T18:04:02.000000002Z"), ok)
vec("time-one-nanosecond-before", "One nanosecond early is before.",
    times("2026-08-27T18:04:02.000000002Z", "2026-08-27T18:04:02.000000001Z"), unv)
vec("empty-expected-satisfies-nothing", "expected {} asserts nothing, so it cannot satisfy.",
    lambda d: ev(d).update(expected={}), unv)
vec("observation-error-cannot-satisfy", "A verifier that reports it could not observe never satisfies, whatever observed_value says.",
    lambda d: ev(d).update(observation_error="connection refused"), unv)
vec("unknown-fields-are-kept-not-fatal", "Unknown fields anywhere are warnings, not errors.",
    lambda d: (d.update(x_extra={"a": 1}), ev(d).update(x_note="hi"), d["task"].update(priority=3)), ok)
vec("mutation-dated-after-now", "A mutation after the decision time: no evidence can follow it yet.",
    times("2026-08-27T18:05:00Z", "2026-08-27T18:05:01Z"), unv)
vec("number-is-not-string", "94107 and \"94107\" differ: types are kept.",
    lambda d: ev(d).update(observed_value={"billing_zip": 94107}), refuted)
vec("null-equals-only-null", "Expected null is contradicted by 0.",
    lambda d: ev(d).update(expected={"deleted_at": None}, observed_value={"deleted_at": 0}), refuted)
vec("big-integers-compare-exactly", "2^53+1 is not 2^53: no float rounding.",
    lambda d: ev(d).update(expected={"n": 9007199254740993}, observed_value={"n": 9007199254740992}), refuted)
vec("decimals-compare-by-value", "1.50 equals 15e-1.",
    lambda d: ev(d).update(expected={"amount": 1.50}, observed_value={"amount": 15e-1}), ok)
vec("array-length-mismatch-refutes", "Arrays of different length contradict.",
    lambda d: ev(d).update(expected={"tags": ["a", "b"]}, observed_value={"tags": ["a", "b", "c"]}), refuted)
vec("object-expected-scalar-observed-refutes", "An expected object met by a scalar is a contradiction.",
    lambda d: ev(d).update(expected={"addr": {"zip": "94107"}}, observed_value={"addr": "94107"}), refuted)
vec("body-contains-false-refutes", "An observed body_contains false contradicts the expected text.",
    lambda d: (ev(d).update(check_type="endpoint_health", expected={"status": 200, "body_contains": "1.4.2"},
                           observed_value={"status": 200, "body_contains": False}),
               d["policy"].update(requires=["endpoint_health"])), refuted)
vec("body-contains-is-text-only-for-health", "Outside endpoint_health, body_contains is an ordinary key compared by equality.",
    lambda d: ev(d).update(expected={"body_contains": "x"}, observed_value={"body_contains": True}), refuted)
vec("unknown-evidence-type-can-cover", "A check type v0.1 does not define still covers; only requires is limited to the three.",
    lambda d: (ev(d).update(check_type="dom_assertion"), d["policy"].update(requires=[])), ok)
vec("requires-duplicates-are-listed-once", "unmet lists each required type once, in policy order.",
    lambda d: (d.update(evidence=[]), d["policy"].update(requires=["test_run", "state_readback", "test_run"])),
    {"state": "unverified", "unmet": ["test_run", "state_readback", "mutation:m1"]})
vec("stale-by-a-fraction-of-a-second", "max_age_s may be fractional: 7.5 s old under 7 s is stale.",
    lambda d: (ev(d).update(at="2026-08-27T18:04:02.500Z"), d["mutations"][0].update(at="2026-08-27T18:04:01Z"),
               d["policy"].update(max_age_s=7)), unv)
vec("refutation-on-one-mutation-refutes-the-claim", "One mutation verified, another contradicted: refuted.",
    lambda d: (d["mutations"].append({"id": "m2", "kind": "state_write", "target": "accounts/4472", "at": "2026-08-27T18:04:02Z"}),
               d["evidence"].append(dict(copy.deepcopy(ev(d)), covers=["m2"], observed_value={"billing_zip": "10001"}))), refuted)
vec("absent-contradiction-does-not-refute", "An absent check with a contradicting value still did not happen.",
    lambda d: (ev(d)["verifier"].update(kind="absent"), ev(d).update(observed_value={"billing_zip": "1"})), unv)
vec("max-age-zero-needs-same-instant", "max_age_s 0: only evidence observed at the decision instant is fresh.",
    lambda d: (d["policy"].update(max_age_s=0), ev(d).update(at=NOW)), ok)
vec("invalid-on-unverified-unknown", "on_unverified is block, warn or record.",
    lambda d: d["policy"].update(on_unverified="ignore"), {"invalid": "policy.on_unverified"})
vec("invalid-time-ten-fraction-digits", "At most nine fractional digits.",
    lambda d: ev(d).update(at="2026-08-27T18:04:09.0000000001Z"), {"invalid": "evidence[0].at"})
vec("invalid-mutation-time-leap-second", "Leap seconds are refused.",
    lambda d: d["mutations"][0].update(at="2026-08-27T23:59:60Z"), {"invalid": "mutations[0].at"})
vec("invalid-covers-second-entry", "The exact covers entry is named.",
    lambda d: ev(d).update(covers=["m1", "m2"]), {"invalid": "evidence[0].covers[1]"})

# The gate's extension: `required_checks` (docs/gate.md, "Checks are requirements").
def gate_item(check, wave, observed, covers=("m1",), at="2026-08-27T18:04:09Z", expected=None):
    return {"check_type": "state_readback", "target": "accounts/4471",
            "expected": expected or {"billing_zip": "94107"}, "observed_value": observed,
            "at": at, "covers": list(covers), "verifier": {"id": "evident/0.1.0", "kind": "independent"},
            "check_id": check, "wave": wave}
def required(*checks):
    return [{"id": c, "waves": list(w)} for c, w in checks]
zip_ok = {"billing_zip": "94107"}
vec("required-check-every-item-must-satisfy", "A required check's failing item is not outvoted by its passing sibling.",
    lambda d: d.update(required_checks=required(("zip", ["before", "after"])),
                       evidence=[gate_item("zip", "before", zip_ok),
                                 dict(gate_item("zip", "after", None), observation_error="timed out")]),
    {"state": "unverified", "unmet": ["check:zip"]})
vec("required-check-needs-each-wave", "A required check observed before and after the commands needs a satisfying item from each wave.",
    lambda d: d.update(required_checks=required(("zip", ["before", "after"])),
                       evidence=[gate_item("zip", "before", zip_ok)]),
    {"state": "unverified", "unmet": ["check:zip"]})
vec("required-check-both-waves-verify", "Both waves satisfied: verified.",
    lambda d: d.update(required_checks=required(("zip", ["before", "after"])),
                       evidence=[gate_item("zip", "before", zip_ok), gate_item("zip", "after", zip_ok)]),
    ok)
vec("required-check-never-observed", "A required check with no item leaves the claim unverified, even when every mutation is covered.",
    lambda d: d.update(required_checks=required(("zip", ["before"]), ("tests", ["command"])),
                       evidence=[gate_item("zip", "before", zip_ok)]),
    {"state": "unverified", "unmet": ["check:tests"]})
vec("required-check-task-level-covers-nothing", "A task-level check (covers []) satisfies its requirement and the policy's type but covers no mutation.",
    lambda d: d.update(required_checks=required(("zip", ["before"])),
                       evidence=[gate_item("zip", "before", zip_ok, covers=())]),
    {"state": "unverified", "unmet": ["mutation:m1"]})
vec("required-checks-ignore-other-evidence", "With required_checks, evidence of no required check counts for nothing, however independent.",
    lambda d: d.update(required_checks=required(("zip", ["before"])),
                       evidence=[base["evidence"][0], gate_item("zip", "before", zip_ok, covers=())]),
    {"state": "unverified", "unmet": ["mutation:m1"]})
vec("required-check-contradiction-after-refutes", "A readback satisfied before the commands and contradicted after them refutes.",
    lambda d: d.update(required_checks=required(("zip", ["before", "after"])),
                       evidence=[gate_item("zip", "before", zip_ok), gate_item("zip", "after", {"billing_zip": "00000"})]),
    refuted)
vec("required-check-named-key-changed", "Both waves satisfy an endpoint's body_contains, but the named key differs: the state changed while the gate ran.",
    lambda d: d.update(policy={"id": "default", "requires": [], "max_age_s": 300},
                       required_checks=required(("api", ["before", "after"])),
                       evidence=[dict(gate_item("api", "before", {"body_contains": "v2.4.1"}, expected={"body_contains": "2.4"}), check_type="endpoint_health"),
                                 dict(gate_item("api", "after", {"body_contains": "v2.4.9"}, expected={"body_contains": "2.4"}), check_type="endpoint_health")]),
    {"state": "unverified", "unmet": ["check:api"]})
vec("invalid-required-check-unknown-wave", "A wave is before, command or after.",
    lambda d: d.update(required_checks=[{"id": "zip", "waves": ["during"]}]), {"invalid": "required_checks[0].waves[0]"})

# The `partial` extension (the spec's open question 2), only under policy.partial = true.
two = lambda d: d["mutations"].append({"id": "m2", "kind": "state_write", "target": "accounts/4472", "at": "2026-08-27T18:04:02Z"})
vec("partial-needs-the-opt-in", "Without policy.partial, one covered mutation of two is unverified, as in v0.1.",
    two, {"state": "unverified", "unmet": ["mutation:m2"]})
vec("partial-with-the-opt-in", "With policy.partial = true, one covered mutation of two is partial, unmet as usual.",
    lambda d: (two(d), d["policy"].update(partial=True)), {"state": "partial", "unmet": ["mutation:m2"]})
vec("partial-nothing-covered-stays-unverified", "Partial needs some mutation covered: none covered stays unverified.",
    lambda d: (two(d), d["policy"].update(partial=True), d.update(evidence=[])),
    {"state": "unverified", "unmet": ["state_readback", "mutation:m1", "mutation:m2"]})
vec("partial-contradiction-still-refutes", "A contradiction refutes whatever the opt-in.",
    lambda d: (two(d), d["policy"].update(partial=True), ev(d).update(observed_value={"billing_zip": "1"})), refuted)
vec("partial-everything-covered-verifies", "All mutations covered under the opt-in: verified.",
    lambda d: d["policy"].update(partial=True), ok)

# The `dom_assertion` extension (the spec's open question 3): a claim document may
# require it only when it declares it; without the declaration the shared vector
# invalid-requires-unknown-type stands.
dom_item = lambda obs: {
    "check_type": "dom_assertion", "target": "browser http://127.0.0.1:8080/orders/4471 #status",
    "expected": {"text": "Paid"}, "observed_value": obs,
    "at": "2026-08-27T18:04:09Z", "covers": ["m1"],
    "verifier": {"id": "gitreal-gate/0.3", "kind": "independent"}}
def dom(obs):
    def edit(d):
        d["extensions"] = ["dom_assertion"]
        d["mutations"][0].update(kind="browser_action", target="orders/4471")
        d["policy"]["requires"] = ["dom_assertion"]
        d["evidence"] = [dom_item(obs)]
    return edit
vec("dom-assertion-declared-verifies", "With extensions = [dom_assertion], a policy may require it and a matching rendered-page observation verifies.",
    dom({"text": "Paid", "count": 1, "visible": True}), ok)
vec("dom-assertion-declared-contradiction-refutes", "A rendered page showing another text refutes, as any readback.",
    dom({"text": "Pending", "count": 1, "visible": True}), refuted)
vec("dom-assertion-required-but-absent", "Required and declared, but only a state_readback was collected: unverified, dom_assertion unmet.",
    lambda d: (d.update(extensions=["dom_assertion"]), d["policy"].update(requires=["dom_assertion"])),
    {"state": "unverified", "unmet": ["dom_assertion"]})
vec("invalid-requires-dom-assertion-undeclared", "Without the declaration a v0.1 reader refuses the extension type (as the shared invalid-requires-unknown-type).",
    lambda d: d["policy"].update(requires=["state_readback", "dom_assertion"]), {"invalid": "policy.requires[1]"})
vec("invalid-unknown-extension", "Only extensions evident knows can be declared.",
    lambda d: d.update(extensions=["css_magic"]), {"invalid": "extensions[0]"})
