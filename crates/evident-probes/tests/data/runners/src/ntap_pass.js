const t = require('tap');

t.pass('only pass');
t.test('group', async (t) => {
  t.ok(true, 'inner');
  t.test('deeper', async (t) => {
    t.equal(1, 1, 'deep ok');
  });
});
