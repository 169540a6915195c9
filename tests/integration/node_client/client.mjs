// An independent client of phalanxd: Node.js + @grpc/grpc-js, the proto loaded at run time from
// proto/phalanx/v1/phalanx.proto. Usage: node client.mjs SOCKET_PATH PROTO_ROOT
// Submits a 2-GPU job, lists jobs, gets the job, asks for an unknown job; exits 1 on any mismatch.
import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';

const [socket, protoRoot] = process.argv.slice(2);
if (!socket || !protoRoot) {
  console.error('usage: node client.mjs SOCKET_PATH PROTO_ROOT');
  process.exit(2);
}
const def = protoLoader.loadSync('phalanx/v1/phalanx.proto', {
  includeDirs: [protoRoot], keepCase: true, longs: String, enums: String, defaults: true,
});
const v1 = grpc.loadPackageDefinition(def).phalanx.v1;
const jobs = new v1.Jobs(`unix:${socket}`, grpc.credentials.createInsecure());
const call = (method, req) => new Promise((resolve, reject) => {
  jobs[method](req, { deadline: Date.now() + 10000 }, (err, res) => (err ? reject(err) : resolve(res)));
});
const fail = (msg) => { console.error(`node client: ${msg}`); process.exit(1); };

const submitted = await call('Submit', {
  spec: { name: 'from-node', gpus: 2, walltime_s: 600, command: ['/bin/sleep', '30'] },
});
const id = submitted.job_id;
if (!id || id === '0') fail(`Submit returned no job id: ${JSON.stringify(submitted)}`);
console.log(`submitted job ${id}`);

const list = await call('List', {});
const mine = list.jobs.find((j) => j.id === id);
if (!mine) fail(`job ${id} missing from List (${list.jobs.length} jobs)`);
if (mine.spec.name !== 'from-node' || mine.spec.gpus !== 2) fail(`List shows ${JSON.stringify(mine.spec)}`);
console.log(`listed ${list.jobs.length} jobs; job ${id} is ${mine.state}`);

const got = await call('Get', { job_id: id });
if (got.id !== id || got.user === '') fail(`Get returned ${JSON.stringify(got)}`);
console.log(`job ${id}: user ${got.user}, state ${got.state}`);

try {
  await call('Get', { job_id: '987654321' });
  fail('Get of an unknown job succeeded');
} catch (err) {
  if (err.code !== grpc.status.NOT_FOUND) fail(`unknown job gave ${err.code} (${err.details}), want NOT_FOUND`);
  console.log(`unknown job: NOT_FOUND (${err.details})`);
}
await call('Cancel', { job_id: id });
console.log('ok');
