//! The completion-belief model (seed 004): one test per rule, and properties that hold
//! for any evidence.

use evident_rules::belief::{
    self, Belief, Blocker, Epoch, Fate, Item, Polarity, Route, assess, bar, posterior_from_log_odds,
};
use proptest::prelude::*;

const G: &str = "out/report.txt contains 'FINAL REPORT'";

fn item(epoch: Epoch, supports: bool, strength: f64, lineage: &str) -> Item {
    Item {
        goal: G.to_owned(),
        epoch,
        supports,
        strength,
        lineage: lineage.to_owned(),
        derived: false,
        blocker: None,
        note: None,
    }
}

fn did(supports: bool, lineage: &str) -> Item {
    let s = if supports { 0.9 } else { 0.85 };
    item(Epoch::Did, supports, s, lineage)
}

fn saw(supports: bool, lineage: &str) -> Item {
    let s = if supports { 0.9 } else { 0.85 };
    item(Epoch::Saw, supports, s, lineage)
}

fn run(items: &[Item]) -> Belief {
    assess(G, items, 0.0).expect("valid items")
}

// --- calibration points named by the seed -------------------------------------------

#[test]
fn one_confirmation_is_not_enough() {
    let b = run(&[did(true, "did:a")]);
    assert!(
        (b.posterior - 0.724_201_460_6).abs() < 1e-6,
        "{}",
        b.posterior
    );
    assert!(!b.accepted);
    assert_eq!(b.route, Some(Route::ObserveAnotherWay));
}

#[test]
fn action_plus_independent_observation_is_accepted() {
    let b = run(&[did(true, "did:a"), saw(true, "saw:filesystem:a")]);
    assert!((b.posterior - 0.975_044_75).abs() < 1e-6, "{}", b.posterior);
    assert!(b.accepted);
    assert_eq!(b.route, None);
}

#[test]
fn fabricated_success_collapses() {
    let b = run(&[did(true, "did:a"), saw(false, "saw:filesystem:a")]);
    assert!((b.posterior - 0.170_144_88).abs() < 1e-6, "{}", b.posterior);
    assert!(!b.accepted);
    assert_eq!(b.route, Some(Route::Replan));
}

// --- collapse ------------------------------------------------------------------------

#[test]
fn six_step_chain_from_one_root_stays_at_one_update() {
    let chain: Vec<Item> = (0..6).map(|_| did(true, "root")).collect();
    let b = run(&chain);
    assert!(
        (b.posterior - 0.724_201_460_6).abs() < 1e-6,
        "{}",
        b.posterior
    );
    assert_eq!(b.counted, 1);
    assert_eq!(b.contributions[0].fate, Fate::Counted);
    for c in &b.contributions[1..] {
        assert_eq!(c.fate, Fate::Collapsed { into: 0 });
        assert_eq!(c.log_odds, 0.0);
    }
    // Counted naively, six confirmations would be far past the bar.
    let naive = posterior_from_log_odds(6.0 * 3.0 * 0.9);
    assert!(naive > 0.9999);
}

#[test]
fn collapse_keeps_the_strongest_of_a_lineage() {
    let weak = item(Epoch::Did, true, 0.3, "x");
    let strong = item(Epoch::Did, true, 0.9, "x");
    let b = run(&[weak, strong]);
    assert_eq!(b.contributions[0].fate, Fate::Collapsed { into: 1 });
    assert_eq!(b.contributions[1].fate, Fate::Counted);
    assert!((b.contributions[1].log_odds - 2.7).abs() < 1e-12);
}

#[test]
fn collapse_on_equal_strength_prefers_the_contrary_item() {
    let a = item(Epoch::Did, true, 0.85, "x");
    let b = item(Epoch::Did, false, 0.85, "x");
    let one = run(&[a.clone(), b.clone()]);
    let two = run(&[b, a]);
    assert_eq!(one.posterior, two.posterior);
    assert!(one.posterior < belief::PRIOR);
}

#[test]
fn lineages_are_distinct_strings() {
    let b = run(&[did(true, "did:a"), did(true, "did:b")]);
    assert_eq!(b.counted, 2);
}

// --- derived -------------------------------------------------------------------------

#[test]
fn derived_items_are_never_counted() {
    let mut verdict = item(Epoch::Saw, true, 0.9, "aggregate");
    verdict.derived = true;
    let b = run(&[did(true, "did:a"), verdict.clone()]);
    assert_eq!(b.contributions[1].fate, Fate::Derived);
    assert_eq!(b.posterior, run(&[did(true, "did:a")]).posterior);
    // A derived item cannot even win its lineage against a weaker real one.
    let weak = item(Epoch::Saw, true, 0.1, "aggregate");
    let b = run(&[verdict, weak]);
    assert_eq!(b.contributions[1].fate, Fate::Counted);
    assert!((b.contributions[1].log_odds - 0.3).abs() < 1e-12);
}

#[test]
fn items_about_another_goal_are_not_counted() {
    let mut other = did(true, "did:z");
    other.goal = "something else".to_owned();
    let b = run(&[other]);
    assert_eq!(b.contributions[0].fate, Fate::OtherGoal);
    assert!((b.posterior - belief::PRIOR).abs() < 1e-12);
}

// --- polarity ------------------------------------------------------------------------

#[test]
fn absence_goal_is_supported_by_a_missing_target() {
    assert!(Polarity::Absence.saw_supports(false));
    assert!(!Polarity::Absence.saw_supports(true));
    assert!(Polarity::Presence.saw_supports(true));
    assert!(!Polarity::Presence.saw_supports(false));
}

#[test]
fn a_delete_that_failed_because_the_target_is_gone_achieved_the_intent() {
    for e in [
        "Path not found: tmp/session.lock",
        "No such file or directory (os error 2)",
        "target does not exist",
        "Cannot find the file specified",
    ] {
        assert!(Polarity::Absence.did_supports(false, Some(e)), "{e}");
        assert!(!Polarity::Presence.did_supports(false, Some(e)), "{e}");
    }
    assert!(!Polarity::Absence.did_supports(false, Some("Permission denied")));
    assert!(!Polarity::Absence.did_supports(false, None));
    assert!(Polarity::Absence.did_supports(true, None));
    assert!(Polarity::Presence.did_supports(true, None));
}

// --- bar -----------------------------------------------------------------------------

#[test]
fn bar_rises_with_caution() {
    assert!((bar(0.0) - 0.95).abs() < 1e-12);
    assert!((bar(1.0) - 0.99).abs() < 1e-12);
    assert!((bar(0.5) - 0.97).abs() < 1e-12);
    let items = [did(true, "did:a"), saw(true, "saw:a")]; // 0.975
    assert!(assess(G, &items, 0.0).unwrap().accepted);
    assert!(assess(G, &items, 0.6).unwrap().accepted); // bar 0.974
    assert!(!assess(G, &items, 0.7).unwrap().accepted); // bar 0.978
}

#[test]
fn the_bar_is_inclusive_and_sharp() {
    // Two independent items whose log-odds land the posterior on 0.95, give or take.
    let needed = (0.95f64 / 0.05).ln() - (0.15f64 / 0.85).ln();
    let at = |s: f64| {
        assess(
            G,
            &[
                item(Epoch::Did, true, s, "a"),
                item(Epoch::Saw, true, s, "b"),
            ],
            0.0,
        )
        .unwrap()
    };
    let s = needed / 6.0;
    assert!(at(s + 1e-9).accepted);
    assert!(!at(s - 1e-9).accepted);
    let b = at(s);
    assert_eq!(b.accepted, b.posterior >= 0.95);
}

#[test]
fn posterior_is_clamped() {
    let many: Vec<Item> = (0..40)
        .map(|i| item(Epoch::Saw, true, 1.0, &format!("l{i}")))
        .collect();
    assert_eq!(run(&many).posterior, 1.0 - belief::FLOOR);
    let many: Vec<Item> = (0..40)
        .map(|i| item(Epoch::Saw, false, 1.0, &format!("l{i}")))
        .collect();
    assert_eq!(run(&many).posterior, belief::FLOOR);
}

// --- veto ---------------------------------------------------------------------------

#[test]
fn a_contradicting_fresh_observation_vetoes_a_high_posterior() {
    // A goal with three parts: three action reports and two fresh looks support, the
    // fresh look at the third part contradicts. The posterior clears the bar; the veto
    // keeps the goal open.
    let items = [
        did(true, "did:a"),
        did(true, "did:b"),
        did(true, "did:c"),
        saw(true, "saw:a"),
        saw(true, "saw:b"),
        saw(false, "saw:c"),
    ];
    let b = run(&items);
    assert!(b.posterior > 0.99, "{}", b.posterior);
    assert!(b.vetoed);
    assert!(!b.accepted);
    assert_eq!(b.route, Some(Route::Replan));
    assert!(b.reason.contains("vetoes"), "{}", b.reason);
    // A contrary DID item does not veto: the action's own report is not a fresh look.
    let b = run(&[
        did(false, "did:x"),
        did(true, "did:a"),
        did(true, "did:b"),
        saw(true, "saw:a"),
    ]);
    assert!(!b.vetoed);
    assert!(b.accepted, "{}", b.posterior);
    // A contrary SAW item collapsed into a stronger supporting one does not veto.
    let weak_no = item(Epoch::Saw, false, 0.5, "saw:a");
    let b = run(&[did(true, "did:a"), saw(true, "saw:a"), weak_no]);
    assert!(!b.vetoed);
    assert!(b.accepted);
}

// --- routing -------------------------------------------------------------------------

#[test]
fn routing_escalates_a_blocker_outside_the_agent() {
    let mut blocked = did(false, "did:a");
    blocked.blocker = Some(Blocker::Permission);
    let b = run(&[blocked, saw(false, "saw:a")]);
    assert_eq!(b.route, Some(Route::Escalate));
    assert!(b.reason.contains("permission"), "{}", b.reason);
}

#[test]
fn routing_without_fresh_observation_asks_for_one() {
    let b = run(&[did(false, "did:a")]);
    assert_eq!(b.route, Some(Route::ObserveAnotherWay));
    assert!(b.reason.contains("no fresh observation"), "{}", b.reason);
}

#[test]
fn routing_on_a_supporting_but_insufficient_observation_asks_for_another() {
    let b = run(&[saw(true, "saw:a")]);
    assert_eq!(b.route, Some(Route::ObserveAnotherWay));
    assert!(b.reason.contains("not enough"), "{}", b.reason);
}

// --- invalid input -------------------------------------------------------------------

#[test]
fn invalid_strength_caution_and_lineage_are_refused() {
    for s in [f64::NAN, f64::INFINITY, -0.1, 1.5] {
        let e = assess(G, &[item(Epoch::Did, true, s, "x")], 0.0).unwrap_err();
        assert!(e.to_string().contains("items[0].strength"), "{e}");
    }
    for c in [f64::NAN, -0.01, 1.01] {
        let e = assess(G, &[], c).unwrap_err();
        assert!(e.to_string().contains("caution"), "{e}");
    }
    let e = assess(G, &[item(Epoch::Did, true, 0.9, "")], 0.0).unwrap_err();
    assert!(e.to_string().contains("items[0].lineage"), "{e}");
}

// --- properties ----------------------------------------------------------------------

fn arb_item() -> impl Strategy<Value = Item> {
    (
        prop_oneof![Just(Epoch::Did), Just(Epoch::Saw)],
        any::<bool>(),
        0.0f64..=1.0,
        0u8..6,
        proptest::bool::weighted(0.15),
    )
        .prop_map(|(epoch, supports, strength, l, derived)| Item {
            goal: G.to_owned(),
            epoch,
            supports,
            strength,
            lineage: format!("l{l}"),
            derived,
            blocker: None,
            note: None,
        })
}

proptest! {
    #[test]
    fn adding_a_weaker_item_to_a_lineage_never_changes_the_posterior(
        items in proptest::collection::vec(arb_item(), 1..12),
        pick in any::<prop::sample::Index>(),
        supports in any::<bool>(),
        frac in 0.0f64..1.0,
        at in any::<prop::sample::Index>(),
    ) {
        let kept: Vec<&Item> = items.iter().filter(|i| !i.derived).collect();
        prop_assume!(!kept.is_empty());
        let anchor = kept[pick.index(kept.len())];
        // Strictly weaker than the strongest of the anchor's lineage.
        let top = items.iter().filter(|i| !i.derived && i.lineage == anchor.lineage)
            .map(|i| i.strength).fold(0.0, f64::max);
        prop_assume!(top > 0.0);
        let mut extra = anchor.clone();
        extra.supports = supports;
        extra.strength = top * frac;
        prop_assume!(extra.strength < top);
        let before = run(&items).posterior;
        let mut more = items.clone();
        more.insert(at.index(more.len() + 1), extra);
        prop_assert_eq!(run(&more).posterior, before);
    }

    #[test]
    fn a_new_supporting_lineage_never_lowers_and_a_contrary_one_never_raises(
        items in proptest::collection::vec(arb_item(), 0..12),
        strength in 0.0f64..=1.0,
        epoch in prop_oneof![Just(Epoch::Did), Just(Epoch::Saw)],
        at in any::<prop::sample::Index>(),
    ) {
        let before = run(&items).posterior;
        for supports in [true, false] {
            let extra = Item {
                goal: G.to_owned(), epoch, supports, strength,
                lineage: "fresh-lineage".to_owned(), derived: false, blocker: None, note: None,
            };
            let mut more = items.clone();
            more.insert(at.index(more.len() + 1), extra);
            let after = run(&more).posterior;
            if supports { prop_assert!(after >= before, "{} < {}", after, before); }
            else { prop_assert!(after <= before, "{} > {}", after, before); }
        }
    }

    #[test]
    fn the_order_of_items_never_matters(
        items in proptest::collection::vec(arb_item(), 0..12),
        seed in any::<u64>(),
    ) {
        let a = run(&items);
        let mut shuffled = items.clone();
        // Deterministic Fisher–Yates from the seed.
        let mut s = seed | 1;
        for i in (1..shuffled.len()).rev() {
            s ^= s << 13; s ^= s >> 7; s ^= s << 17;
            let j = (s % (i as u64 + 1)) as usize;
            shuffled.swap(i, j);
        }
        let b = run(&shuffled);
        prop_assert_eq!(a.posterior.to_bits(), b.posterior.to_bits());
        prop_assert_eq!(a.accepted, b.accepted);
        prop_assert_eq!(a.route, b.route);
        prop_assert_eq!(a.counted, b.counted);
    }

    #[test]
    fn posterior_stays_in_the_clamped_open_interval(
        items in proptest::collection::vec(arb_item(), 0..40),
        caution in 0.0f64..=1.0,
    ) {
        let b = assess(G, &items, caution).unwrap();
        prop_assert!(b.posterior >= belief::FLOOR && b.posterior <= 1.0 - belief::FLOOR);
        let vetoed = b.contributions.iter().any(|c| {
            c.fate == Fate::Counted && items[c.index].epoch == Epoch::Saw && !items[c.index].supports
        });
        prop_assert_eq!(b.vetoed, vetoed);
        prop_assert_eq!(b.accepted, b.posterior >= b.bar && !vetoed);
        prop_assert_eq!(b.route.is_none(), b.accepted);
        prop_assert_eq!(b.contributions.len(), items.len());
    }
}
