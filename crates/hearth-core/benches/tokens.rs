//! Token counting throughput on mixed prose, code and CJK (target ≥ 4 MiB/s).
//! Run with `make bench`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hearth_core::tokens::Encoding;

fn corpus() -> String {
    let prose = "Hearth keeps what you tell it in one encrypted file on your own machine. \
                 It remembers that you moved to Lisbon last spring and prefer short answers. ";
    let code = "fn main() {\n    let xs: Vec<u32> = (0..10).map(|x| x * x).collect();\n    println!(\"{xs:?}\");\n}\n";
    let cjk = "東京都の天気は明日晴れるでしょう。週末は雨が降るかもしれません。";
    let mut s = String::new();
    while s.len() < 1 << 20 {
        s.push_str(prose);
        s.push_str(code);
        s.push_str(cjk);
    }
    s
}

fn bench(c: &mut Criterion) {
    let text = corpus();
    let mut group = c.benchmark_group("count_tokens_1MiB_mixed");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.sample_size(10);
    for enc in [Encoding::O200kBase, Encoding::Cl100kBase] {
        enc.count("warm up");
        group.bench_function(format!("{enc:?}"), |b| b.iter(|| enc.count(&text)));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
