use evident_probes::ProbeError;
use serde_json::json;

use crate::{SECRET, ctx, err, ok, run, service, src, unique};

async fn admin(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .expect("connect to test redis")
}

#[tokio::test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs Redis: .ci/run sets its address and runs this (see README, Development)"
)]
async fn redis_get_hgetall_exists() {
    let Some(url) = service("EVIDENT_TEST_REDIS_URL") else {
        return;
    };
    let mut a = admin(&url).await;
    let k = unique("evident:session");
    let h = unique("evident:user");
    let missing = unique("evident:gone");
    let big = unique("evident:big");
    let _: () = redis::cmd("SET")
        .arg(&k)
        .arg("active")
        .query_async(&mut a)
        .await
        .unwrap();
    let _: () = redis::cmd("HSET")
        .arg(&h)
        .arg("zip")
        .arg("94107")
        .arg("tier")
        .arg("gold")
        .query_async(&mut a)
        .await
        .unwrap();
    let _: () = redis::cmd("SET")
        .arg(&big)
        .arg("x".repeat(5000))
        .query_async(&mut a)
        .await
        .unwrap();
    let d = tempfile::tempdir().unwrap();
    let mut c = ctx(d.path());
    c.env.insert("CACHE_URL".into(), url.clone());
    let s = |op: &str, key: &str| {
        src(&format!(
            r#"{{ redis = {{ url_env = "CACHE_URL", op = "{op}", key = "{key}" }} }}"#
        ))
    };

    let o = ok(run(&s("get", &k), &c, 5.0).await);
    assert_eq!(
        serde_json::Value::Object(o),
        json!({"exists": true, "value": "active"})
    );
    let o = ok(run(&s("hgetall", &h), &c, 5.0).await);
    assert_eq!(
        serde_json::Value::Object(o),
        json!({"exists": true, "fields": {"zip": "94107", "tier": "gold"}})
    );
    let o = ok(run(&s("exists", &k), &c, 5.0).await);
    assert_eq!(o["exists"], json!(true));
    // Absence goals.
    for op in ["get", "hgetall", "exists"] {
        let o = ok(run(&s(op, &missing), &c, 5.0).await);
        assert_eq!(o["exists"], json!(false), "{op}");
    }
    // A value that would contradict: the world changed after the claim.
    let _: () = redis::cmd("SET")
        .arg(&k)
        .arg("revoked")
        .query_async(&mut a)
        .await
        .unwrap();
    assert_eq!(
        ok(run(&s("get", &k), &c, 5.0).await)["value"],
        json!("revoked")
    );
    // Wrong type is a rejected query, not a value.
    let e = err(run(&s("get", &h), &c, 5.0).await);
    assert!(matches!(e, ProbeError::BadQuery { .. }), "{e}");
    assert!(e.to_string().contains("WRONGTYPE"), "{e}");
    let small = src(&format!(
        r#"{{ redis = {{ url_env = "CACHE_URL", op = "get", key = "{big}", max_bytes = 1000 }} }}"#
    ));
    assert!(matches!(
        err(run(&small, &c, 5.0).await),
        ProbeError::Oversize { limit: 1000, .. }
    ));
    let _: () = redis::cmd("DEL")
        .arg(&k)
        .arg(&h)
        .arg(&big)
        .query_async(&mut a)
        .await
        .unwrap();
}

#[tokio::test]
async fn redis_unreachable_and_secret() {
    let d = tempfile::tempdir().unwrap();
    let mut c = ctx(d.path());
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    c.env.insert(
        "CACHE_URL".into(),
        format!("redis://:{SECRET}@127.0.0.1:{port}/0"),
    );
    let s = src(r#"{ redis = { url_env = "CACHE_URL", op = "get", key = "k" } }"#);
    let e = err(run(&s, &c, 5.0).await);
    assert!(matches!(e, ProbeError::ConnectionRefused { .. }), "{e}");
    let s = src(r#"{ redis = { url_env = "UNSET_CACHE_URL_Z", op = "get", key = "k" } }"#);
    assert!(matches!(
        err(run(&s, &c, 5.0).await),
        ProbeError::EnvMissing { .. }
    ));
}

/// Attack (red16): a snapshot set hashed each key from DUMP only, which carries no
/// expiry, so an EXPIRE put on a key nobody claimed (it will vanish) or a PERSIST
/// (a temporary key made permanent) passed unseen. Twin: keys left alone, a TTL
/// included, hash the same on a second read.
#[tokio::test]
#[cfg_attr(
    not(evident_services),
    ignore = "needs Redis: .ci/run sets its address and runs this (see README, Development)"
)]
async fn a_snapshot_set_sees_expire_and_persist() {
    let Some(url) = service("EVIDENT_TEST_REDIS_URL") else {
        return;
    };
    let mut a = admin(&url).await;
    let p = unique("evident:ttlset");
    let (owner, tmp, calm) = (
        format!("{p}:owner"),
        format!("{p}:tmp"),
        format!("{p}:calm"),
    );
    for (k, ttl) in [(&owner, None), (&tmp, Some(600)), (&calm, Some(900))] {
        let mut c = redis::cmd("SET");
        c.arg(k).arg("v");
        if let Some(t) = ttl {
            c.arg("EX").arg(t);
        }
        let _: () = c.query_async(&mut a).await.unwrap();
    }
    let d = tempfile::tempdir().unwrap();
    let mut c = ctx(d.path());
    c.env.insert("CACHE_URL".into(), url.clone());
    let source: evident_probes::sets::SetSource = toml::from_str::<toml::Value>(&format!(
        r#"s = {{ redis = {{ url_env = "CACHE_URL", pattern = "{p}:*" }} }}"#
    ))
    .unwrap()["s"]
        .clone()
        .try_into()
        .unwrap();
    let read = || async {
        let items = evident_probes::sets::read(&source, &c, std::time::Duration::from_secs(5))
            .await
            .unwrap();
        items
            .into_iter()
            .map(|i| (i.fields["key"].as_str().unwrap().to_string(), i.sha256))
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    let before = read().await;
    assert_eq!(before.len(), 3);
    assert_eq!(
        read().await,
        before,
        "twin: nothing changed, the same hashes"
    );
    let _: () = redis::cmd("EXPIRE")
        .arg(&owner)
        .arg(3600)
        .query_async(&mut a)
        .await
        .unwrap();
    let _: () = redis::cmd("PERSIST")
        .arg(&tmp)
        .query_async(&mut a)
        .await
        .unwrap();
    let after = read().await;
    let _: () = redis::cmd("DEL")
        .arg(&owner)
        .arg(&tmp)
        .arg(&calm)
        .query_async(&mut a)
        .await
        .unwrap();
    assert_ne!(after[&owner], before[&owner], "EXPIRE on a key is a change");
    assert_ne!(after[&tmp], before[&tmp], "PERSIST on a key is a change");
    assert_eq!(after[&calm], before[&calm], "a TTL left alone is no change");
}
