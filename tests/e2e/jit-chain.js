'use strict';
// The JIT workload of jit.sh: outer -> middle -> hotLeaf, arithmetic in a
// loop. hotLeaf is left to V8's optimizing compiler (its own loop then has
// no calls out: the leaf of the samples); outer and middle are never
// optimized (--allow-natives-syntax), so hotLeaf is not inlined into them
// and each stays a frame of its own, named in the perf map.
function hotLeaf(n) {
	let x = 0;
	for (let i = 0; i < n; i++)
		x = (x * 31 + i) % 1000003;
	return x;
}
function middle(n) {
	return hotLeaf(n) + 1;
}
function outer(n) {
	return middle(n) + 1;
}
%NeverOptimizeFunction(middle);
%NeverOptimizeFunction(outer);
const end = Date.now() + 1000 * Number(process.argv[2] || 30);
let sink = 0;
// jitdump.sh: node buffers its jitdump writes (2 MiB): after a second,
// code enough to fill the buffer, so that outer, middle and hotLeaf's
// compiled code reach the file while it runs
let burstAt = process.argv[3] === 'flush-jitdump' ? Date.now() + 1000 : Infinity;
while (Date.now() < end) {
	sink += outer(200000);
	if (Date.now() >= burstAt) {
		burstAt = Infinity;
		for (let i = 0; i < 2000; i++)
			sink += new Function('x', `return x + ${i};`)(i) & 1;
	}
}
console.log(sink > 0 ? 'done' : 'done.');
