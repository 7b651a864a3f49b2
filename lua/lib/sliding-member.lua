--[[ sliding-member: the name of a SLIDING_WINDOW log's member, as lua/hit.lua adds it and
  lua/give-back.lua removes it: the stamp of its take (us) and its number, unique in the log. ]]

local function member(stamp, index)
  return stamp .. ':' .. index
end
