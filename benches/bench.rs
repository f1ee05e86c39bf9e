//! `make bench`: a plain harness; each section is a function that prints medians.

use std::time::{Duration, Instant};

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn time<T>(runs: usize, mut f: impl FnMut() -> T) -> Duration {
    median(
        (0..runs)
            .map(|_| {
                let start = Instant::now();
                std::hint::black_box(f());
                start.elapsed()
            })
            .collect(),
    )
}

/// The simulator's world on the real notes app: what one capture costs the device side.
fn sim_world() {
    use droid::sim::{model::AppModel, render, world::World};
    let spec = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/fixtures/apps/notes/model.json"
    );
    let Ok(model) = AppModel::load(spec) else {
        println!("sim_world: skipped, {spec} not found");
        return;
    };
    let load = time(5, || AppModel::load(spec).map(|m| m.screens().len()));
    let mut world = World::new(model, Default::default());
    let _ = world.open_screen("s001");
    let dump = time(20, || world.hierarchy_xml());
    let shot = time(20, || world.screenshot());
    let image = world.screenshot();
    let png = time(20, || render::png(&image));
    let tap = time(20, || {
        world.tap(900, 260);
        world.key("KEYCODE_BACK")
    });
    println!("sim_world: notes model load {load:?}, hierarchy_xml {dump:?}, screenshot render {shot:?}, png encode {png:?}, tap+back {tap:?} (medians)");
}

/// One `shell,v2` command against a running simulator, as a client would send it; returns the
/// stdout bytes.
fn sim_shell(port: u16, command: &str) -> Vec<u8> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    let frame = |s: &str| format!("{:04x}{s}", s.len());
    let mut request = frame("host:tport:any");
    request.push_str(&frame(&format!("shell,v2,raw:{command}")));
    stream.write_all(request.as_bytes()).expect("send");
    stream.write_all(&[4, 0, 0, 0, 0]).expect("close stdin");
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes).expect("answer");
    // OKAY + 8-byte transport id + OKAY, then packets.
    let mut out = Vec::new();
    let mut at = 16;
    while at + 5 <= bytes.len() {
        let len = u32::from_le_bytes(bytes[at + 1..at + 5].try_into().unwrap()) as usize;
        if bytes[at] == 1 {
            out.extend_from_slice(&bytes[at + 5..at + 5 + len]);
        }
        at += 5 + len;
    }
    out
}

/// The simulator behind its socket: round trips, and what capturing the hierarchy and the
/// screenshot concurrently saves under the realistic latency model.
fn sim_server() {
    use droid::sim::{fault::Latency, Sim, SimConfig};
    let sim = Sim::start(SimConfig::new("builtin:shop")).expect("simulator");
    let port = sim.port();
    let echo = time(50, || sim_shell(port, "echo hi"));
    let dump = time(20, || {
        sim_shell(
            port,
            "uiautomator dump /data/local/tmp/d.xml && cat /data/local/tmp/d.xml",
        )
    });
    let shot = time(20, || sim_shell(port, "screencap -p"));
    println!("sim_server (latency none): shell echo round trip {echo:?}, dump+cat {dump:?}, screencap -p {shot:?} (medians)");
    drop(sim);

    let mut config = SimConfig::new("builtin:shop");
    config.latency = Latency::Realistic;
    let sim = Sim::start(config).expect("simulator");
    let port = sim.port();
    let dump_cmd = "uiautomator dump /data/local/tmp/d.xml && cat /data/local/tmp/d.xml";
    let sequential = time(3, || {
        (sim_shell(port, dump_cmd), sim_shell(port, "screencap -p"))
    });
    let concurrent = time(3, || {
        std::thread::scope(|scope| {
            let dump = scope.spawn(|| sim_shell(port, dump_cmd));
            let shot = sim_shell(port, "screencap -p");
            (dump.join().expect("dump"), shot)
        })
    });
    println!("sim_server (latency realistic): dump then screenshot {sequential:?}, both concurrently {concurrent:?} (medians)");
}

fn main() {
    sim_world();
    sim_server();
}
