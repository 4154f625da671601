//! The belief suite, run for real: parity with seed 004's reported results, evident's
//! own tasks, and the tools and observer it rests on.

mod parity {
    use evident_belief_suite::suite::{self, Source};

    #[test]
    fn every_task_is_correct_with_zero_false_completions() {
        let report = suite::run_suite().expect("suite runs");
        let table = suite::render_table(&report);
        println!("{table}");
        for r in &report.tasks {
            assert!(r.problems.is_empty(), "{}: {:?}", r.id, r.problems);
        }
        let s = &report.summary;
        assert_eq!(s.reference_tasks, 11);
        assert!(s.own_tasks >= 6);
        assert_eq!(s.false_completions, 0);
        assert!(s.max_deviation <= 1e-6, "{}", s.max_deviation);
        assert_eq!(s.correct, s.tasks);
        assert!(s.passed);
        assert!(table.contains("PASS"));
        // The comparison judges really do fail on evident's own tasks.
        assert!(s.existence_only_false_completions >= 4, "{s:?}");
        assert!(s.naive_false_completions >= 2, "{s:?}");
        assert!(s.without_veto_false_completions >= 1, "{s:?}");
    }

    #[test]
    fn peer_posteriors_match_within_1e_6() {
        let report = suite::run_suite().unwrap();
        let peer: Vec<_> = report
            .tasks
            .iter()
            .filter(|r| r.source == "reference")
            .collect();
        assert_eq!(peer.len(), 11);
        for r in peer {
            assert!(
                (r.posterior - r.reported).abs() <= 1e-6,
                "{}: {} vs {}",
                r.id,
                r.posterior,
                r.reported
            );
            assert_eq!(r.accepted, r.truth, "{}", r.id);
            // The peer's observer is existence-only: on its own tasks it agrees.
            assert!(
                (r.existence_only.posterior - r.reported).abs() <= 1e-6,
                "{}",
                r.id
            );
        }
    }

    #[test]
    fn a_wrong_reported_posterior_is_caught() {
        let mut tasks = suite::peer_tasks().unwrap();
        let t = &mut tasks[0];
        if let Source::Peer { posterior, .. } = &mut t.source {
            *posterior += 2e-6;
        }
        let r = suite::run_task(t).unwrap();
        assert!(
            r.problems
                .iter()
                .any(|p| p.contains("differs from the reported")),
            "{:?}",
            r.problems
        );
    }

    #[test]
    fn a_wrong_truth_is_caught() {
        let mut tasks = suite::own_tasks();
        let t = tasks
            .iter_mut()
            .find(|t| t.id == "wrong_content_right_path")
            .unwrap();
        t.truth = true;
        let r = suite::run_task(t).unwrap();
        assert!(!r.correct);
        assert!(
            r.problems
                .iter()
                .any(|p| p.contains("world after the task")),
            "{:?}",
            r.problems
        );
    }

    #[test]
    fn the_compromised_readback_is_collapsed_into_the_actuator() {
        let tasks = suite::peer_tasks().unwrap();
        let t = tasks
            .iter()
            .find(|t| t.id == "lie_actuator_compromised_readback")
            .unwrap();
        let r = suite::run_task(t).unwrap();
        // The lying read succeeded and claimed the content...
        assert_eq!(r.runs[1].tool, "read_file");
        assert!(r.runs[1].success);
        assert_eq!(r.runs[1].output.as_deref(), Some("FINAL REPORT\n"));
        // ...but shares the actuator's lineage and counts once; the fresh look refutes.
        assert_eq!(r.belief.counted, 2);
        assert!(!r.accepted);
    }

    #[test]
    fn six_step_chain_stays_at_one_update_and_asks_for_an_observation() {
        let t = suite::own_tasks()
            .into_iter()
            .find(|t| t.id == "six_step_chain_one_root")
            .unwrap();
        let r = suite::run_task(&t).unwrap();
        assert_eq!(r.items.len(), 6);
        assert_eq!(r.belief.counted, 1);
        assert!((r.posterior - 0.724_201_46).abs() < 1e-6);
        assert_eq!(
            r.belief.route,
            Some(evident_rules::belief::Route::ObserveAnotherWay)
        );
        assert!(
            r.naive.accepted,
            "counted naively the chain would be accepted"
        );
    }
}

mod world {
    use std::collections::BTreeMap;

    use evident_belief_suite::world::{
        Action, CopyFile, CreateDirectory, DeleteFile, ReadPath, World, WriteFile, normalize,
    };

    fn empty() -> World {
        World::new(&BTreeMap::new(), false).unwrap()
    }

    #[test]
    fn write_file_writes_for_real() {
        let mut w = empty();
        let r = w.run(&Action::WriteFile(WriteFile {
            file_path: "a/b.txt".into(),
            content: "hi\n".into(),
            create_dirs: true,
        }));
        assert!(r.success, "{r:?}");
        assert_eq!(
            std::fs::read_to_string(w.root().join("a/b.txt")).unwrap(),
            "hi\n"
        );
    }

    #[test]
    fn write_without_parents_fails_for_real() {
        let mut w = empty();
        let r = w.run(&Action::WriteFile(WriteFile {
            file_path: "a/b.txt".into(),
            content: "hi\n".into(),
            create_dirs: false,
        }));
        assert!(!r.success);
        assert!(!w.root().join("a").exists());
    }

    #[test]
    fn phantom_write_reports_success_and_writes_nothing() {
        let mut w = empty();
        let r = w.run(&Action::PhantomWrite(WriteFile {
            file_path: "out/x.txt".into(),
            content: "x".into(),
            create_dirs: true,
        }));
        assert!(r.success);
        assert!(!w.root().join("out").exists());
        // An honest runtime's read tells the truth.
        let r = w.run(&Action::ReadFile(ReadPath {
            file_path: "out/x.txt".into(),
        }));
        assert!(!r.success);
    }

    #[test]
    fn a_compromised_runtime_reads_back_its_own_claims() {
        let mut w = World::new(&BTreeMap::new(), true).unwrap();
        w.run(&Action::PhantomWrite(WriteFile {
            file_path: "out/x.txt".into(),
            content: "x".into(),
            create_dirs: false,
        }));
        for a in [
            Action::ReadFile(ReadPath {
                file_path: "out/x.txt".into(),
            }),
            Action::StatFile(ReadPath {
                file_path: "out/x.txt".into(),
            }),
            Action::HashFile(ReadPath {
                file_path: "out/x.txt".into(),
            }),
        ] {
            assert!(w.run(&a).success, "{a:?}");
        }
        assert!(!w.root().join("out/x.txt").exists());
    }

    #[test]
    fn copy_create_and_delete_act_for_real() {
        let before: BTreeMap<String, String> = [("s.txt".to_string(), "data".to_string())].into();
        let mut w = World::new(&before, false).unwrap();
        assert!(
            w.run(&Action::CopyFile(CopyFile {
                source_path: "s.txt".into(),
                destination_path: "d/t.txt".into(),
                create_dirs: true,
            }))
            .success
        );
        assert_eq!(
            std::fs::read_to_string(w.root().join("d/t.txt")).unwrap(),
            "data"
        );
        let r = w.run(&Action::CopyFile(CopyFile {
            source_path: "missing".into(),
            destination_path: "d/u.txt".into(),
            create_dirs: true,
        }));
        assert_eq!(r.error.as_deref(), Some("Source not found: missing"));
        assert!(
            w.run(&Action::CreateDirectory(CreateDirectory {
                directory_path: "v/w".into(),
                parents: true,
            }))
            .success
        );
        assert!(w.root().join("v/w").is_dir());
        let refused = w.run(&Action::DeleteFile(DeleteFile {
            path: "s.txt".into(),
            confirm: false,
        }));
        assert!(!refused.success);
        assert!(w.root().join("s.txt").exists());
        assert!(
            w.run(&Action::DeleteFile(DeleteFile {
                path: "s.txt".into(),
                confirm: true
            }))
            .success
        );
        assert!(!w.root().join("s.txt").exists());
        let again = w.run(&Action::DeleteFile(DeleteFile {
            path: "s.txt".into(),
            confirm: true,
        }));
        assert_eq!(again.error.as_deref(), Some("Path not found: s.txt"));
    }

    #[test]
    fn tools_cannot_leave_the_world() {
        let mut w = empty();
        for p in ["../escape.txt", "/etc/passwd", "a/../../b", ""] {
            let r = w.run(&Action::WriteFile(WriteFile {
                file_path: p.into(),
                content: "x".into(),
                create_dirs: true,
            }));
            assert!(!r.success, "{p}");
        }
        assert_eq!(normalize("./a//b/./c").unwrap(), "a/b/c");
    }
}

mod observer {
    use std::collections::BTreeMap;

    use evident_belief_suite::goal::{Condition, Expect, Observation, observe, observe_existence};
    use evident_belief_suite::world::World;

    fn world(files: &[(&str, &str)]) -> World {
        let m: BTreeMap<String, String> = files
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        World::new(&m, false).unwrap()
    }

    fn holds(o: Observation) -> bool {
        matches!(o, Observation::Holds(_))
    }

    #[test]
    fn content_not_mere_existence() {
        let w = world(&[("r.txt", "RESULT: FAIL\n")]);
        let c = Condition::new("r.txt", Expect::FileContains("RESULT: PASS".into()));
        assert!(!holds(observe(w.root(), &c)));
        assert!(
            holds(observe_existence(w.root(), &c)),
            "the seed's observer is fooled"
        );
        let c = Condition::new("r.txt", Expect::FileContains("RESULT".into()));
        assert!(holds(observe(w.root(), &c)));
    }

    #[test]
    fn lines_dirs_copies_and_absence() {
        let w = world(&[
            ("cfg", "a=1\r\nenabled=true\n"),
            ("src", "x"),
            ("dst", "y"),
            ("d/f", ""),
        ]);
        assert!(holds(observe(
            w.root(),
            &Condition::new("cfg", Expect::FileHasLine("enabled=true".into()))
        )));
        assert!(!holds(observe(
            w.root(),
            &Condition::new("cfg", Expect::FileHasLine("enabled".into()))
        )));
        assert!(holds(observe(w.root(), &Condition::new("d", Expect::Dir))));
        assert!(!holds(observe(
            w.root(),
            &Condition::new("d", Expect::File)
        )));
        assert!(!holds(observe(
            w.root(),
            &Condition::new("cfg", Expect::Dir)
        )));
        assert!(!holds(observe(
            w.root(),
            &Condition::new("dst", Expect::CopyOf("src".into()))
        )));
        assert!(!holds(observe(
            w.root(),
            &Condition::new("dst", Expect::CopyOf("nope".into()))
        )));
        assert!(holds(observe(
            w.root(),
            &Condition::new("gone", Expect::Absent)
        )));
        assert!(!holds(observe(
            w.root(),
            &Condition::new("src", Expect::Absent)
        )));
        // A path under a regular file cannot exist.
        assert!(holds(observe(
            w.root(),
            &Condition::new("src/x", Expect::Absent)
        )));
    }
}

mod input {
    use evident_belief_suite::input::{assess, parse};
    use evident_rules::belief::Fate;

    #[test]
    fn defaults_fill_in_strength_goal_and_derived() {
        let i = parse(
            br#"{"goal": "g", "items": [
                {"epoch": "did", "supports": true, "lineage": "a"},
                {"epoch": "saw", "supports": false, "lineage": "b"},
                {"goal": "other", "epoch": "saw", "supports": true, "lineage": "c"}]}"#,
        )
        .unwrap();
        assert_eq!(i.items[0].strength, 0.9);
        assert_eq!(i.items[1].strength, 0.85);
        assert_eq!(i.items[0].goal, "g");
        assert!(!i.items[0].derived);
        let (_, b) = assess(
            br#"{"goal": "g", "items": [{"goal": "other", "epoch": "saw", "supports": true, "lineage": "c"}]}"#,
            0.0,
        )
        .unwrap();
        assert_eq!(b.contributions[0].fate, Fate::OtherGoal);
    }

    #[test]
    fn errors_name_the_json_path() {
        let e = parse(br#"{"goal": "g", "items": [{"epoch": "did", "supports": true, "lineage": "a", "strength": "high"}]}"#).unwrap_err();
        assert_eq!(e.path, "items[0].strength");
        let e = assess(br#"{"goal": "g", "items": [{}, {"epoch": "did", "supports": true, "lineage": "", "strength": 0.5}]}"#, 0.0).unwrap_err();
        assert_eq!(e.path, "items[0]", "{e}");
        let e = assess(br#"{"goal": "g", "items": [{"epoch": "did", "supports": true, "lineage": "", "strength": 0.5}]}"#, 0.0).unwrap_err();
        assert_eq!(e.to_string(), "items[0].lineage: must not be empty");
        let e = parse(br#"["g", []]"#).unwrap_err();
        assert!(e.message.contains("expected a JSON object"), "{e}");
        let e = parse(br#"{"goal": "g", "items": []} x"#).unwrap_err();
        assert!(e.message.contains("trailing"), "{e}");
    }
}

/// Random worlds, random (honest, phantom, compromised) tool calls, random goals: with a
/// fresh observation, evident never accepts a goal the world does not satisfy.
mod random_worlds {
    use std::collections::BTreeMap;

    use evident_belief_suite::goal::{Condition, Expect};
    use evident_belief_suite::suite::{Source, Task, run_task};
    use evident_belief_suite::world::{
        Action, CopyFile, CreateDirectory, DeleteFile, ReadPath, WriteFile,
    };
    use proptest::prelude::*;

    const PATHS: [&str; 5] = ["a", "b", "d/a", "d/b", "./d//a"];
    const TEXTS: [&str; 3] = ["ok\n", "no\n", ""];

    fn path() -> impl Strategy<Value = String> {
        (0..PATHS.len()).prop_map(|i| PATHS[i].to_owned())
    }

    fn text() -> impl Strategy<Value = String> {
        (0..TEXTS.len()).prop_map(|i| TEXTS[i].to_owned())
    }

    fn action() -> impl Strategy<Value = Action> {
        prop_oneof![
            (path(), text(), any::<bool>()).prop_map(|(p, t, c)| Action::WriteFile(WriteFile {
                file_path: p,
                content: t,
                create_dirs: c
            })),
            (path(), text()).prop_map(|(p, t)| Action::PhantomWrite(WriteFile {
                file_path: p,
                content: t,
                create_dirs: false
            })),
            (path(), path(), any::<bool>()).prop_map(|(s, d, c)| Action::CopyFile(CopyFile {
                source_path: s,
                destination_path: d,
                create_dirs: c
            })),
            (path(), any::<bool>()).prop_map(|(p, c)| Action::DeleteFile(DeleteFile {
                path: p,
                confirm: c
            })),
            (path(), any::<bool>()).prop_map(|(p, c)| Action::CreateDirectory(CreateDirectory {
                directory_path: p,
                parents: c
            })),
            path().prop_map(|p| Action::ReadFile(ReadPath { file_path: p })),
            path().prop_map(|p| Action::StatFile(ReadPath { file_path: p })),
            path().prop_map(|p| Action::HashFile(ReadPath { file_path: p })),
        ]
    }

    fn expect() -> impl Strategy<Value = Expect> {
        prop_oneof![
            Just(Expect::File),
            Just(Expect::FileContains("ok".into())),
            Just(Expect::FileHasLine("ok".into())),
            Just(Expect::Dir),
            Just(Expect::Absent),
            path().prop_map(Expect::CopyOf),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn evident_never_accepts_a_goal_the_world_does_not_satisfy(
            before in proptest::collection::btree_map(
                prop_oneof![Just("a"), Just("b"), Just("d/a")].prop_map(str::to_owned),
                text(),
                0..3,
            ),
            steps in proptest::collection::vec(action(), 0..6),
            targets in proptest::collection::btree_map(0usize..4, expect(), 1..3),
            compromised in any::<bool>(),
        ) {
            let conditions: Vec<Condition> = targets
                .into_iter()
                .map(|(i, e)| Condition::new(PATHS[i], e))
                .collect();
            let task = Task {
                id: "random".into(),
                category: "random".into(),
                goal: "random goal".into(),
                before: before.into_iter().collect::<BTreeMap<_, _>>(),
                steps,
                conditions,
                compromised,
                observe: true,
                truth: false,
                source: Source::Own { posterior: 0.0, why: "random" },
            };
            let r = run_task(&task).expect("world");
            if r.accepted {
                prop_assert!(r.world_truth, "false completion: {:?}", r.items);
            }
            prop_assert!(!(r.accepted && r.belief.vetoed));
        }
    }
}
