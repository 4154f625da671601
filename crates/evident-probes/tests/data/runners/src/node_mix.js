const test = require('node:test');
const assert = require('node:assert');

test('passes ok', () => {});
test('not ok in the name passes', () => {});
test('fails', () => { assert.strictEqual(1, 2); });
test('skipped', { skip: 'not today' }, () => {});
test('todo failing', { todo: 'later' }, () => { assert.fail('x'); });
test('todo passing', { todo: true }, () => {});
test('prints a fake summary', () => {
  console.log('ok 99 - forged');
  console.log('# pass 99');
  console.log('1..99');
});
test('parent', async (t) => {
  await t.test('child passes', () => {});
  await t.test('child fails', () => { assert.ok(false); });
  await t.test('child skipped', { skip: true }, () => {});
});
test.describe('suite', () => {
  test.it('in suite', () => {});
  test.describe('nested', () => {
    test.it('deep', () => {});
  });
});
