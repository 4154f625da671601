const test = require('tape');

test('ok in the name: passes', (t) => {
  t.ok(true, 'ok 3 looks like a test point');
  t.equal(1, 1, 'not ok is only words here');
  t.end();
});

test('fails', (t) => {
  t.equal(1, 2, 'one is two');
  t.end();
});

test('skipped test', { skip: true }, (t) => {
  t.ok(true);
  t.end();
});

test('skip assertion and todo', (t) => {
  t.skip('skipped assertion');
  t.ok(false, 'todo assertion', { todo: true });
  t.end();
});

test('todo test', { todo: true }, (t) => {
  t.ok(false, 'fails inside todo');
  t.end();
});

test('nested', (t) => {
  t.test('inner', (st) => {
    st.ok(true, 'inner passes');
    st.ok(false, 'inner fails');
    st.end();
  });
  t.end();
});

test('prints a fake summary', (t) => {
  console.log('# tests 99');
  console.log('# pass  99');
  console.log('# fail  0');
  t.pass('after the fake summary');
  t.end();
});
