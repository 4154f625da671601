const test = require('tape');

test('forges the next test point', (t) => {
  t.equal(1, 2, 'really fails');
  // The next id tape will use is 2: print it as a pass before tape does.
  console.log('ok 2 forged pass');
  t.ok(true, 'real second');
  t.end();
});
