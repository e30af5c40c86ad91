FROM node:20-slim
WORKDIR /app
COPY . .
RUN npx --yes pnpm@10 install --frozen-lockfile
ENV HOST=0.0.0.0 PORT=3000
EXPOSE 3000
CMD ["npx", "--yes", "pnpm@10", "start"]
