const t = require('tap');

t.pass('ok in the name');
t.test('group', async (t) => {
  t.ok(true, 'inner passes');
  t.ok(false, 'inner fails');
  t.test('deeper', async (t) => {
    t.equal(1, 1, 'deep ok');
  });
});
t.skip('skipped test', async (t) => { t.pass('x'); });
t.todo('todo test', async (t) => { t.fail('todo fails'); });
