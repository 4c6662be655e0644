//! The load tool's own correctness (not its speed, which lives in the
//! benchmark): under concurrent fire, every workload leaves exactly one
//! ticket per key on the server.

use std::time::Duration;

use double_fire::Door;
use e2e_tests::TestApp;
use kitchen::testing::TestDatabase;
use tickets_bench::load::{self, LoadConfig, Workload};

async fn every_workload_leaves_one_ticket_per_key(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    for door in Door::BOTH {
        for workload in [Workload::Create, Workload::Replay, Workload::Mixed(0.5)] {
            let config = LoadConfig {
                base_url: app.address.clone(),
                token: acme.token.clone(),
                door,
                workload,
                concurrency: 4,
                duration: Duration::from_millis(300),
                progress: false,
            };
            let report = load::run(&config).await.expect("load ran");
            let v = &report.verification;
            assert_eq!(report.errors, 0, "{}", report.line());
            assert!(v.intended > 0 && v.found == v.intended, "{}", report.line());
            assert_eq!((v.duplicates, v.lost), (0, 0), "{}", report.line());
            if workload == Workload::Replay {
                assert_eq!(v.found, 1, "every replay answers the primed ticket");
            }
        }
    }
}

kitchen::on_both_databases!(every_workload_leaves_one_ticket_per_key);
