const test = require('tape');

test('passes', (t) => {
  t.ok(true, 'ok 2 - a description that looks like a test point');
  t.equal(2, 2);
  t.end();
});

test('skip assertion', (t) => {
  t.skip('not here');
  t.end();
});
