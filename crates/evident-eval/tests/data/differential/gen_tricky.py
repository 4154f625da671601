import json, random
random.seed(5)
WS = [" ", "\t", "\u00a0", "\u2003", "\u001f", "\u3000", "\u0085", ""]
def ws(): return random.choice(WS)
ACT = ["send", "Send", "send_email", "wr\u00efte", "a b", "x"]
FIELDS = ["id", "path", "Id", "sha", "n"]
def val():
    return random.choice([None, "", "  ", "\u00a0", "\u001c", "v", " v ", 0, 0.0, False, True, [], [0], {}, {"a": None}, "\u200b", -1, 1e300])
def case(i):
    reqs = []
    for _ in range(random.randint(1, 4)):
        r = {"action": ws() + random.choice(ACT) + ws()}
        if random.random() < 0.8:
            r["evidence_fields"] = [ws() + random.choice(FIELDS) + ws() for _ in range(random.randint(0, 3))]
        reqs.append(r)
    events = []
    for _ in range(random.randint(0, 6)):
        e = {"action": ws() + random.choice(ACT) + ws(), "success": random.random() < 0.7}
        if random.random() < 0.85:
            e["evidence"] = {k: val() for k in random.sample(FIELDS + [" id"], random.randint(0, 4))}
        events.append(e)
    c = {"case_id": ws() + random.choice(["c", "é", "日本", "x" * 30]) + str(i) + ws(), "task": ws() + "t",
         "completion_claimed": random.random() < 0.7, "requirements": reqs}
    if random.random() < 0.9:
        c["events"] = events
    if random.random() < 0.3:
        c["extra"] = {"nested": [1, {"k": "v"}]}
    return c
with open("tricky.jsonl", "w", encoding="utf-8", newline="\n") as f:
    for i in range(400):
        f.write(json.dumps(case(i), ensure_ascii=random.random() < 0.5) + "\n")
        if random.random() < 0.05:
            f.write(random.choice(["", "   ", "\u00a0\u2003"]) + "\n")
