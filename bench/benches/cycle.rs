//! Criterion benches of the hot paths, on a live `redis-server` started by
//! the harness: one lock cycle of the floor, `lua-release` and `redlock`
//! (one node), and a raw `PING`. Run with `cargo bench -p bench`.

use bench::client::{Client, Common, Floor, Impl, Node, Wait};
use criterion::{Criterion, criterion_group, criterion_main};
use locks::Owner;
use std::time::Duration;

fn cycles(c: &mut Criterion) {
    let server = harness::RedisServer::start().expect("redis-server");
    let nodes = vec![Node::of(&server)];
    // The bench's own runtime flavour: one thread does everything.
    let rt = bench::client::runtime().expect("runtime");
    let common = Common {
        ttl: Duration::from_secs(10),
        max_wait: Duration::from_secs(10),
    };
    let owner = Owner::new("criterion", 1);
    let floor = rt
        .block_on(Floor::connect(&nodes, common.ttl))
        .expect("floor");
    let mut group = c.benchmark_group("lock-cycle");
    group.bench_function("ping", |b| {
        b.to_async(&rt)
            .iter(|| async { floor.ping().await.expect("ping") })
    });
    group.bench_function("floor", |b| {
        b.to_async(&rt).iter(|| async {
            let token = floor.try_acquire("crit:floor").await.unwrap().unwrap();
            floor.release("crit:floor", &token).await.unwrap();
        })
    });
    for which in [
        Impl::Rung("lua-release", Wait::Fixed),
        Impl::Rung("redlock", Wait::Fixed),
        Impl::Rslock,
    ] {
        let client = rt
            .block_on(Client::connect(which, &nodes, common, 1))
            .expect("connect");
        let key = format!("crit:{}", which.label());
        group.bench_function(which.label(), |b| {
            b.to_async(&rt).iter(|| async {
                let held = client
                    .try_acquire(&key, &owner, common.ttl)
                    .await
                    .unwrap()
                    .unwrap();
                client.release(&key, held).await.unwrap();
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = cycles
}
criterion_main!(benches);
