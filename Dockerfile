# The reference CTF server. Build: docker build -t graphql-atomic-rate-limit .
FROM node:20-alpine AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json ./
COPY src ./src
RUN npm run build

FROM node:20-alpine
WORKDIR /app
ENV NODE_ENV=production
# The server listens on loopback by default; in a container that would reach nothing.
ENV HOST=0.0.0.0
COPY package.json package-lock.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY lua ./lua
COPY schema ./schema
COPY data ./data
COPY public ./public
USER node
EXPOSE 4000
CMD ["node", "dist/server/main.js"]
