const test = require('node:test');

test('top ok', () => {});
test('parent passes', async (t) => {
  await t.test('child one', () => {});
  await t.test('child two', () => {});
});
test.describe('suite', () => {
  test.it('in suite', () => {});
});
test('skipped', { skip: true }, () => {});
