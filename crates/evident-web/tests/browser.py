"""The page in a real headless Chromium (Debian's /usr/bin/chromium, driven by
playwright; never a browser download). Run by tests/web.rs:

    python3 browser.py BASE_URL REFUTED_ID HOSTILE_ID OUT_DIR

Loads the decisions list and the refuted decision's page at a desktop and a phone
width, and once with JavaScript off; asserts what the rendered DOM shows (the state,
the timeline, the contradicting check), that nothing was refused by the
Content-Security-Policy or failed to load, that the phone page does not scroll
sideways, and that hostile claim text ran no script. Saves screenshots to OUT_DIR.
"""
import sys
from playwright.sync_api import sync_playwright

base, refuted, hostile, out = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
problems = []


def check(cond, what):
    if not cond:
        problems.append(what)


def watch(page, label):
    page.on("console", lambda m: m.type in ("error", "warning") and problems.append(f"{label}: console {m.type}: {m.text}"))
    page.on("pageerror", lambda e: problems.append(f"{label}: page error: {e}"))
    # The icon is fetched lazily and its request is aborted when the page closes
    # first (a race seen in CI); every other request must succeed.
    page.on(
        "requestfailed",
        lambda r: None
        if r.url.endswith("/favicon.svg")
        else problems.append(f"{label}: request failed: {r.url}"),
    )
    page.on("dialog", lambda d: (problems.append(f"{label}: a dialog opened: {d.message}"), d.dismiss()))
    page.on("response", lambda r: r.status >= 400 and problems.append(f"{label}: {r.status} for {r.url}"))


def decision_dom(page, label):
    state = page.locator("#state")
    check(state.inner_text().strip() == "refuted", f"{label}: state shows {state.inner_text()!r}")
    check(page.locator("#verdict.refuted").count() == 1, f"{label}: no refuted verdict panel")
    tl = page.locator("#timeline ol.timeline")
    check(tl.is_visible(), f"{label}: timeline not visible")
    events = tl.locator("li.event")
    check(events.count() >= 7, f"{label}: {events.count()} timeline events")
    text = tl.inner_text()
    for want in ("mutation m1", "mutation m2", "freshness window opens", "decided: refuted", "zip-4472 (before)", "zip-4472 (after)"):
        check(want in text, f"{label}: timeline lacks {want!r}")
    check(tl.locator("li.in-window").count() >= 5, f"{label}: the freshness window band is missing")
    contradict = page.locator("#coverage td.cell.contradicts")
    check(contradict.count() >= 2, f"{label}: {contradict.count()} contradicting cells")
    check(contradict.first.is_visible(), f"{label}: contradicting cell not visible")
    row = page.locator("#checks article.check.contradicts tr.mismatch").first
    check(row.is_visible(), f"{label}: no visible mismatching key")
    cells = row.locator("td").all_inner_texts()
    check(cells[:2] == ['"10001"', '"10002"'], f"{label}: the mismatch shows {cells}")
    check("billing_zip" in row.inner_text(), f"{label}: the mismatch is not billing_zip")
    check("verifies" in page.locator("#signature").inner_text(), f"{label}: signature status")
    check(page.locator("#record-hash").inner_text().strip() != "", f"{label}: no record hash")


def no_sideways_scroll(page, label):
    wide = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    if wide > 1:
        culprits = page.evaluate("""() => { const W = document.documentElement.clientWidth, out = [];
          for (const e of document.querySelectorAll('body *')) {
            if (e.getBoundingClientRect().right <= W + 1) continue;
            let scrolls = false;
            for (let a = e.parentElement; a; a = a.parentElement)
              if (getComputedStyle(a).overflowX !== 'visible') { scrolls = true; break; }
            if (!scrolls) out.push(e.tagName.toLowerCase() + '.' + e.className + ': ' + (e.textContent || '').slice(0, 60));
          }
          return out.slice(0, 8); }""")
        problems.append(f"{label}: the page scrolls sideways by {wide}px: " + " | ".join(culprits))


with sync_playwright() as p:
    browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])

    # Desktop.
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    watch(page, "desktop")
    page.goto(f"{base}/")
    check(page.locator("table#decisions tr.decision").count() == 2, "desktop: gate rows")
    first = page.locator("table#decisions tr.decision").first
    check(first.get_attribute("data-state") == "refuted", "desktop: newest row is not the refuted one")
    check("refuted" in first.locator("a.state").inner_text(), "desktop: state badge")
    # The script styles nothing but makes the state filter apply on change.
    page.select_option("select[name=state]", "verified")
    page.wait_for_url("**state=verified**")
    check(page.locator("table#decisions tr.decision").count() == 1, "desktop: filter by state")
    page.goto(f"{base}/")
    page.screenshot(path=f"{out}/list-desktop.png", full_page=True)
    page.locator(f"a[href='/decisions/{refuted}']").first.click()
    page.wait_for_url(f"**/decisions/{refuted}")
    decision_dom(page, "desktop")
    check(page.locator("button.copy").count() >= 1, "desktop: the script did not run")
    page.screenshot(path=f"{out}/decision-desktop.png", full_page=True)
    page.locator("#timeline").screenshot(path=f"{out}/timeline-desktop.png")
    page.locator("#coverage").screenshot(path=f"{out}/coverage-desktop.png")

    # Hostile claim text: nothing runs, nothing is injected.
    page.goto(f"{base}/decisions/{hostile}")
    check(page.locator("script").count() == 1, "hostile: a script element was injected")
    check(page.locator("img, iframe, svg[onload], style").count() == 0, "hostile: injected element")
    check("<script>" in page.locator("#task").inner_text(), "hostile: the task id is not shown as text")
    check("script" not in page.locator("h1").inner_text(), "hostile: the agent's task id is in the verdict heading")
    page.screenshot(path=f"{out}/hostile-desktop.png", full_page=True)
    page.close()

    # Phone.
    phone = browser.new_page(viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True, has_touch=True)
    watch(phone, "phone")
    phone.goto(f"{base}/")
    no_sideways_scroll(phone, "phone list")
    phone.screenshot(path=f"{out}/list-phone.png", full_page=True)
    phone.goto(f"{base}/decisions/{refuted}")
    decision_dom(phone, "phone")
    no_sideways_scroll(phone, "phone decision")
    phone.screenshot(path=f"{out}/decision-phone.png", full_page=True)
    phone.goto(f"{base}/decisions/{hostile}")
    no_sideways_scroll(phone, "phone hostile")
    phone.close()

    # Without JavaScript: the same content, rendered by the server.
    ctx = browser.new_context(java_script_enabled=False, viewport={"width": 1024, "height": 900})
    nojs = ctx.new_page()
    watch(nojs, "no-js")
    nojs.goto(f"{base}/?state=refuted")
    check(nojs.locator("table#decisions tr.decision").count() == 1, "no-js: filter by state")
    nojs.goto(f"{base}/decisions/{refuted}")
    decision_dom(nojs, "no-js")
    check(nojs.locator("button.copy").count() == 0, "no-js: the script ran")
    nojs.screenshot(path=f"{out}/decision-nojs.png", full_page=True)
    ctx.close()
    browser.close()

if problems:
    print("\n".join(problems))
    sys.exit(1)
print("browser: ok")
