"""Compute-heavy functions for the sealed-code benchmark (bench/protect.py): each program
marks its hot function `--@sealed` and prints a checksum, so the original and the sealed
copy can be compared for output as well as time."""

PROGRAMS: dict[str, str] = {
    "fib (calls)": """
--@sealed
local function fib(n)
  if n < 2 then return n end
  return fib(n - 1) + fib(n - 2)
end
print(fib(24))
""",
    "sieve (loops)": """
--@sealed
local function sieve(n)
  local composite, count = {}, 0
  for i = 2, n do
    if not composite[i] then
      count += 1
      for j = i * i, n, i do composite[j] = true end
    end
  end
  return count
end
print(sieve(400000))
""",
    "nbody (floats)": """
--@sealed
local function simulate(steps)
  local bodies = {}
  for i = 1, 5 do
    bodies[i] = {x = i, y = i * 0.5, z = -i, vx = 0, vy = 0.1 * i, vz = 0, m = 1 / i}
  end
  for _ = 1, steps do
    for i = 1, #bodies do
      local a = bodies[i]
      for j = i + 1, #bodies do
        local b = bodies[j]
        local dx, dy, dz = a.x - b.x, a.y - b.y, a.z - b.z
        local d2 = dx * dx + dy * dy + dz * dz + 0.01
        local mag = 0.001 / (d2 * math.sqrt(d2))
        a.vx -= dx * b.m * mag; a.vy -= dy * b.m * mag; a.vz -= dz * b.m * mag
        b.vx += dx * a.m * mag; b.vy += dy * a.m * mag; b.vz += dz * a.m * mag
      end
    end
    for _, b in ipairs(bodies) do
      b.x += 0.01 * b.vx; b.y += 0.01 * b.vy; b.z += 0.01 * b.vz
    end
  end
  return string.format("%.6f", bodies[1].x + bodies[5].z)
end
print(simulate(20000))
""",
    "strings (methods)": """
--@sealed
local function build(n)
  local parts = {}
  for i = 1, n do
    local word = string.rep(string.char(97 + i % 26), 1 + i % 5)
    parts[#parts + 1] = word:upper() .. tostring(i % 7)
  end
  local text = table.concat(parts, ",")
  local count = 0
  for _ in text:gmatch("A+") do count += 1 end
  return #text, count
end
print(build(60000))
""",
    "sort (callbacks)": """
--@sealed
local function sorted(n)
  local t, seed = {}, 42
  for i = 1, n do
    seed = (seed * 1103515245 + 12345) % 2147483648
    t[i] = {key = seed % 1000, id = i}
  end
  table.sort(t, function(a, b)
    if a.key ~= b.key then return a.key < b.key end
    return a.id < b.id
  end)
  return t[1].id, t[n].id
end
print(sorted(40000))
""",
}
