#!/usr/bin/env python3
"""Writes the malformed-claim corpus: one file per case, and expect.json mapping each
file to the JSON path its error must name ("" = the document root). Run from this
folder; the output is checked in, this script only documents how it was made."""
import json, copy

base = {
    "spec_version": "0.1",
    "task": {"id": "deploy-4471", "description": "Update the billing address", "requested_by": "user"},
    "claimed_outcome": "Updated the billing address on account 4471.",
    "mutations": [{"id": "m1", "kind": "state_write", "target": "accounts/4471", "at": "2026-08-27T18:04:02Z"}],
    "evidence": [{
        "check_type": "state_readback", "target": "accounts/4471",
        "expected": {"billing_zip": "94107"}, "observed_value": {"billing_zip": "94107"},
        "at": "2026-08-27T18:04:09Z", "covers": ["m1"],
        "verifier": {"id": "gitreal-gate/0.3", "kind": "independent"}}],
    "policy": {"id": "default", "requires": ["state_readback"], "max_age_s": 300},
}
text = json.dumps(base)
cases = {}

def raw(name, data, path):
    cases[name] = path
    with open(name, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())

def doc(name, edit, path):
    d = copy.deepcopy(base)
    edit(d)
    raw(name, json.dumps(d, indent=2), path)

def setp(path, value):
    def edit(d):
        cur = d
        for k in path[:-1]:
            cur = cur[k]
        cur[path[-1]] = value
    return edit

def delp(path):
    def edit(d):
        cur = d
        for k in path[:-1]:
            cur = cur[k]
        del cur[path[-1]]
    return edit

raw("01-empty.json", b"", "")
raw("02-whitespace-only.json", b"  \n\t ", "")
raw("03-invalid-utf8.json", text.replace("user", "us\xffer").encode("latin-1"), "")
raw("04-truncated.json", text[: len(text) // 2], "evidence[0]")
raw("05-trailing-garbage.json", text + " {}", "")
raw("06-duplicate-top-key.json", text[:-1] + ', "task": {"id": "x"}}', "")
raw("07-duplicate-deep-in-observed.json",
    text.replace('"observed_value": {"billing_zip": "94107"}',
                 '"observed_value": {"addr": {"zip": {"a": 1, "a": 2}}}'),
    "evidence[0].observed_value.addr.zip")
raw("08-deep-nesting.json", '{"spec_version": "0.1", "x": ' + "[" * 10000 + "]" * 10000 + "}", "x" + "[0]" * 128)
raw("09-not-an-object.json", "[1, 2, 3]", "")
raw("10-single-quotes.json", text.replace('"spec_version"', "'spec_version'"), "")
raw("11-trailing-comma.json", text[:-1] + ",}", "")
raw("12-lone-surrogate.json", text.replace("accounts/4471", "acc\\ud800"), "mutations[0].target")
raw("13-bom-then-garbage.json", b"\xef\xbb\xbfnot json", "")
doc("14-time-space-separator.json", setp(["evidence", 0, "at"], "2026-08-27 18:04:09Z"), "evidence[0].at")
doc("15-time-no-seconds.json", setp(["evidence", 0, "at"], "2026-08-27T18:04Z"), "evidence[0].at")
doc("16-time-no-offset.json", setp(["mutations", 0, "at"], "2026-08-27T18:04:02"), "mutations[0].at")
doc("17-time-compact-offset.json", setp(["evidence", 0, "at"], "2026-08-27T18:04:09+0000"), "evidence[0].at")
doc("18-time-leap-second.json", setp(["evidence", 0, "at"], "2026-08-27T23:59:60Z"), "evidence[0].at")
doc("19-time-ten-fraction-digits.json", setp(["evidence", 0, "at"], "2026-08-27T18:04:09.1234567891Z"), "evidence[0].at")
doc("20-time-surrounding-space.json", setp(["evidence", 0, "at"], " 2026-08-27T18:04:09Z"), "evidence[0].at")
doc("21-time-not-a-date.json", setp(["evidence", 0, "at"], "2026-02-30T18:04:09Z"), "evidence[0].at")
doc("22-time-is-a-number.json", setp(["evidence", 0, "at"], 1788000000), "evidence[0].at")
doc("23-spec-version-number.json", setp(["spec_version"], 0.1), "spec_version")
doc("24-spec-version-other.json", setp(["spec_version"], "1.0"), "spec_version")
doc("25-missing-spec-version.json", delp(["spec_version"]), "spec_version")
doc("26-kind-uppercase.json", setp(["evidence", 0, "verifier", "kind"], "Independent"), "evidence[0].verifier.kind")
doc("27-kind-unknown.json", setp(["evidence", 0, "verifier", "kind"], "trusted"), "evidence[0].verifier.kind")
doc("28-on-unverified-unknown.json", setp(["policy", "on_unverified"], "ignore"), "policy.on_unverified")
doc("29-covers-unknown-id.json", setp(["evidence", 0, "covers"], ["m1", "m9"]), "evidence[0].covers[1]")
doc("30-covers-not-array.json", setp(["evidence", 0, "covers"], "m1"), "evidence[0].covers")
doc("31-duplicate-mutation-id.json",
    lambda d: d["mutations"].append(dict(d["mutations"][0])), "mutations[1].id")
doc("32-expected-array.json", setp(["evidence", 0, "expected"], ["94107"]), "evidence[0].expected")
doc("33-expected-null.json", setp(["evidence", 0, "expected"], None), "evidence[0].expected")
doc("34-max-age-string.json", setp(["policy", "max_age_s"], "300"), "policy.max_age_s")
doc("35-max-age-negative.json", setp(["policy", "max_age_s"], -5), "policy.max_age_s")
doc("36-requires-unknown.json", setp(["policy", "requires"], ["state_readback", "dom_assertion"]), "policy.requires[1]")
doc("37-mutations-not-array.json", setp(["mutations"], {"m1": {}}), "mutations")
doc("38-mutation-id-number.json", setp(["mutations", 0, "id"], 1), "mutations[0].id")
doc("39-task-missing.json", delp(["task"]), "task")
doc("40-evidence-at-missing.json", delp(["evidence", 0, "at"]), "evidence[0].at")
doc("41-verifier-missing.json", delp(["evidence", 0, "verifier"]), "evidence[0].verifier")
doc("42-verifier-string.json", setp(["evidence", 0, "verifier"], "independent"), "evidence[0].verifier")
raw("43-number-leading-zero.json", text.replace('"max_age_s": 300', '"max_age_s": 0300'), "policy.max_age_s")
raw("44-control-char-in-string.json", text.replace("billing address", "billing\u0001address"), "task.description")
doc("45-check-type-number.json", setp(["evidence", 0, "check_type"], 3), "evidence[0].check_type")

with open("expect.json", "w") as f:
    json.dump(cases, f, indent=2, sort_keys=True)
    f.write("\n")
print(len(cases), "cases")
