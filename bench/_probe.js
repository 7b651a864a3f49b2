const { luaLibrary } = require('../dist/lua');
const { Redis } = require('ioredis');
(async () => {
  const r = new Redis(Number(process.argv[2]));
  const lib = luaLibrary();
  await r.call('FUNCTION', 'LOAD', 'REPLACE', lib.source);
  await r.call('FUNCTION', 'LOAD', 'REPLACE', `#!lua name=probe
redis.register_function('p_empty', function(keys, args) return 1 end)
redis.register_function('p_three', function(keys, args)
  local v = redis.call('GET', keys[1]); local t = redis.call('PTTL', keys[1]); return redis.call('INCRBY', keys[1], 1) end)
redis.register_function('p_one', function(keys, args) return redis.call('INCRBY', keys[1], 1) end)
redis.register_function('p_tables', function(keys, args)
  local a,b,c,d,e,f,g,h,i,j,k,l,m,n,o = {},{},{},{},{},{},{},{},{},{},{},{},{},{},{}
  for x = 1, #args do local y = tonumber(args[x]) end
  return 1 end)`);
  const stat = async () => {
    const t = await r.info('commandstats');
    const m = /cmdstat_fcall:calls=(\d+),usec=(\d+)/.exec(t);
    return m ? +m[2] : 0;
  };
  const N = 3000;
  for (let rep = 0; rep < 2; rep++)
  for (const fn of ['p_empty', 'p_one', 'p_three', 'p_tables', lib.hit]) {
    const a = await stat();
    for (let i = 0; i < N; i++) await r.call('FCALL', fn, 1, `k:{${i % 1000}}`, 1, 1, 1000000, 60000, 1, 'hit', 1, 1);
    const b = await stat();
    console.log(fn, ((b - a) / N).toFixed(2));
  }
  r.disconnect();
})().catch((e) => { console.error(e); process.exit(1); });
