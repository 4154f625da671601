const test = require('node:test');

// Every subtest passes, the parent fails after them: one failure of its own.
test('parent throws after its subtests', async (t) => {
  await t.test('child passes', () => {});
  throw new Error('parent broke');
});
